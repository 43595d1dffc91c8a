import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface LocalServer {
  /** e.g. http://127.0.0.1:40123 */
  url: string;
  close(): Promise<void>;
}

/** Serves `handler` (an Express app or a plain listener) on 127.0.0.1; port 0 picks a free one. */
export async function listenLocal(handler: http.RequestListener, port = 0): Promise<LocalServer> {
  const server = http.createServer(handler);
  server.listen(port, "127.0.0.1");
  await once(server, "listening");
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}`,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}
