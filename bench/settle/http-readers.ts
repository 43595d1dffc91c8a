// Run by bench/settle/settle-bench.ts in a process of its own (`fork`): CLIENTS clients fetching URL in a loop, as
// other machines would, so that their reading of the answers is not charged to the relayer's process. A client
// answered other than 200 waits as Retry-After asks (1 s without one). Stops when the parent sends "stop", then
// sends back the answers completed before it, counted by status, and the 200s' bytes.
const [url, clientsArg] = process.argv.slice(2);
if (url === undefined || clientsArg === undefined || process.send === undefined) {
  throw new Error("usage: fork(trees-load-clients.ts, [url, clients]) with an IPC channel");
}

let stop = false;
let bytes = 0;
const statuses: Record<string, number> = {};
process.on("message", (message) => {
  if (message === "stop") stop = true;
});

async function client(): Promise<void> {
  while (!stop) {
    const response = await fetch(url!);
    const body = Buffer.from(await response.arrayBuffer());
    if (stop) break;
    const status = response.status === 200 ? "200" : `${response.status} ${/"code":"(\w+)"/.exec(body.toString("utf8"))?.[1] ?? ""}`.trim();
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (response.status === 200) bytes += body.byteLength;
    else await new Promise((resolve) => setTimeout(resolve, 1000 * Number(response.headers.get("retry-after") ?? 1)));
  }
}

process.send({ ready: true });
await Promise.all(Array.from({ length: Number(clientsArg) }, client));
process.send({ statuses, bytes }, () => process.exit(0));
