// Run by bench/settle/settle-bench.ts in a process of its own (`fork`), as other machines would be, so that reading
// the answers costs the bench's process (the relayer and its indexer) nothing: READERS readers each fetching URL
// (with the bearer TOKEN, when not empty) one request after another, COUNT times each, or, with COUNT 0, until the
// parent sends "stop". A reader answered other than 200 waits as Retry-After asks (1 s without one). Sends "ready"
// once loaded and starts on "go"; then sends the answers completed in time, counted by status, the 200s' bytes, the
// last answer's length and the milliseconds taken.
const [url, readersArg, countArg, token] = process.argv.slice(2);
if (url === undefined || readersArg === undefined || countArg === undefined || process.send === undefined) {
  throw new Error("usage: fork(http-readers.ts, [url, readers, count, token?]) with an IPC channel");
}
const count = Number(countArg);

let stop = false;
let bytes = 0;
let lastBytes = 0;
const statuses: Record<string, number> = {};
const go = new Promise<void>((resolve) =>
  process.on("message", (message) => {
    if (message === "go") resolve();
    if (message === "stop") stop = true;
  }),
);

async function reader(): Promise<void> {
  for (let done = 0; count === 0 ? !stop : done < count; done++) {
    const response = await fetch(url!, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    const body = Buffer.from(await response.arrayBuffer());
    if (stop) break;
    const status = response.status === 200 ? "200" : `${response.status} ${/"code":"(\w+)"/.exec(body.toString("utf8"))?.[1] ?? ""}`.trim();
    statuses[status] = (statuses[status] ?? 0) + 1;
    lastBytes = body.byteLength;
    if (response.status === 200) bytes += body.byteLength;
    else await new Promise((resolve) => setTimeout(resolve, 1000 * Number(response.headers.get("retry-after") ?? 1)));
  }
}

process.send("ready");
await go;
const started = performance.now();
await Promise.all(Array.from({ length: Number(readersArg) }, reader));
process.send({ statuses, bytes, lastBytes, ms: performance.now() - started }, () => process.exit(0));
