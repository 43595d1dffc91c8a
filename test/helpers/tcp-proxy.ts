import { once } from "node:events";
import net, { type AddressInfo } from "node:net";

export interface TcpProxy {
  url: string;
  /** Closes the proxy and every connection through it: the service behind it looks down. */
  cut(): Promise<void>;
  /** Listens again on the same port after a cut: the service is back. */
  restore(): Promise<void>;
}

/** Forwards 127.0.0.1:<free port> to `target` (http://host:port), so a test can take a service away from a client. */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port: ownPort } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${ownPort}`,
    async cut() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, "close");
    },
    async restore() {
      server.listen(ownPort, "127.0.0.1");
      await once(server, "listening");
    },
  };
}
