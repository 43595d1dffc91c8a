import { listenLocal, type LocalServer } from "../../../x402-peers/local-server.js";

/** Headers a hop between two HTTP connections does not pass on. */
const HOP_HEADERS = new Set(["host", "connection", "content-length", "transfer-encoding", "content-encoding", "keep-alive"]);

export interface Redirector extends LocalServer {
  /** Answers 302 to `paidUrl`, on this origin. */
  movedUrl: string;
  /** Passes each request on to the target and its answer back: the target's paid resource on this origin. */
  paidUrl: string;
  /** Answers 302 to the target itself, on another origin. */
  elsewhereUrl: string;
}

/**
 * A site the user trusts, in front of `target` (a seller's paid URL on another origin): it redirects within itself to
 * a path that serves the target's resource (the seller's 402 and, once paid, its answer), or redirects to the target.
 */
export async function startRedirector(target: string): Promise<Redirector> {
  const server = await listenLocal((request, response) => {
    const path = request.url ?? "/";
    if (path === "/moved") return void response.writeHead(302, { location: "/paid" }).end();
    if (path === "/elsewhere") return void response.writeHead(302, { location: target }).end();
    if (path !== "/paid") return void response.writeHead(404).end();
    const headers = Object.entries(request.headers).flatMap(([name, value]) => (HOP_HEADERS.has(name) || value === undefined ? [] : [[name, String(value)] as [string, string]]));
    fetch(target, { method: request.method, headers, redirect: "manual" })
      .then(async (answer) => {
        const passed = [...answer.headers].filter(([name]) => !HOP_HEADERS.has(name));
        response.writeHead(answer.status, Object.fromEntries(passed)).end(Buffer.from(await answer.arrayBuffer()));
      })
      .catch(() => response.writeHead(502).end());
  });
  return { ...server, movedUrl: `${server.url}/moved`, paidUrl: `${server.url}/paid`, elsewhereUrl: `${server.url}/elsewhere` };
}
