import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface SwitchableRpc {
  /** e.g. http://127.0.0.1:40123 */
  url: string;
  /** From now on requests are accepted and never answered, as by an RPC provider that hangs. */
  switchOff(): void;
  /** Forwards requests again; the ones held while off stay unanswered. */
  switchOn(): void;
  /** How many requests arrived while off. */
  readonly heldRequests: number;
  close(): Promise<void>;
}

/** A JSON-RPC proxy in front of `targetUrl` (a local chain's RPC) that the test can switch off and on. */
export async function startSwitchableRpc(targetUrl: string): Promise<SwitchableRpc> {
  let on = true;
  let held = 0;
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (!on) {
      held++;
      return;
    }
    const upstream = await fetch(targetUrl, { method: "POST", headers: { "content-type": "application/json" }, body: Buffer.concat(chunks) });
    response.writeHead(upstream.status, { "content-type": "application/json" }).end(Buffer.from(await upstream.arrayBuffer()));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    switchOff() {
      on = false;
    },
    switchOn() {
      on = true;
    },
    get heldRequests() {
      return held;
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}
