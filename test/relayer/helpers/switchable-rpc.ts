import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * How the proxy treats requests: forward them; hang (accept, never answer, as an RPC provider that hangs);
 * refuse connections (nothing listens: ECONNREFUSED); reset them (ECONNRESET); or answer eth_call (call-error) or
 * another method (`error-on:<method>`) with a JSON-RPC error without revert data (-32005 limit exceeded, as
 * rate-limited public nodes do), in a batch too.
 */
export type RpcMode = "forward" | "hang" | "refuse" | "reset" | "call-error" | `error-on:${string}`;

interface JsonRpcCall {
  id: unknown;
  method: string;
}

export interface SwitchableRpc {
  /** e.g. http://127.0.0.1:40123; the same in every mode. */
  url: string;
  setMode(mode: RpcMode): Promise<void>;
  /** How many requests arrived while hanging. */
  readonly heldRequests: number;
  close(): Promise<void>;
}

/** A JSON-RPC proxy in front of `targetUrl` (a local chain's RPC) that the test can break in several ways. */
export async function startSwitchableRpc(targetUrl: string): Promise<SwitchableRpc> {
  let mode: RpcMode = "forward";
  let held = 0;
  const server = http.createServer(async (request, response) => {
    if (mode === "reset") {
      request.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (mode === "hang") {
      held++;
      return;
    }
    const body = Buffer.concat(chunks);
    const failing = mode === "call-error" ? "eth_call" : mode.startsWith("error-on:") ? mode.slice("error-on:".length) : undefined;
    if (failing !== undefined) {
      const parsed = JSON.parse(body.toString("utf8")) as JsonRpcCall | JsonRpcCall[];
      const calls = Array.isArray(parsed) ? parsed : [parsed];
      if (calls.some((call) => call.method === failing)) {
        const answers = await Promise.all(
          calls.map(async (call) =>
            call.method === failing
              ? { jsonrpc: "2.0", id: call.id, error: { code: -32005, message: "limit exceeded" } }
              : (await fetch(targetUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(call) })).json(),
          ),
        );
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(Array.isArray(parsed) ? answers : answers[0]));
        return;
      }
    }
    const upstream = await fetch(targetUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
    response.writeHead(upstream.status, { "content-type": "application/json" }).end(Buffer.from(await upstream.arrayBuffer()));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;

  const stopListening = async () => {
    server.closeAllConnections();
    server.close();
    await once(server, "close");
  };
  return {
    url: `http://127.0.0.1:${port}`,
    async setMode(next) {
      if (next === mode) return;
      if (next === "refuse") await stopListening();
      if (mode === "refuse") {
        server.listen(port, "127.0.0.1");
        await once(server, "listening");
      }
      mode = next;
    },
    get heldRequests() {
      return held;
    },
    async close() {
      if (mode !== "refuse") await stopListening();
    },
  };
}
