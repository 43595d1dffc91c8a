import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { EthereumProvider } from "hardhat/types/providers";

interface JsonRpcRequest {
  id: number | string | null;
  method: string;
  params?: unknown[];
}

export interface JsonRpcBridge {
  /** e.g. http://127.0.0.1:40123 */
  url: string;
  /** Every request served so far, in order. */
  readonly requests: JsonRpcRequest[];
  /** Answers the next `count` requests with HTTP 503, as an overloaded RPC provider does. */
  failNext(count: number): void;
  /** Replaces every result of `method` with `rewrite(result)`, as a faulty node would; undefined restores them. */
  tamper(method: string, rewrite: ((result: unknown) => unknown) | undefined): void;
  close(): Promise<void>;
}

/**
 * Serves an in-process Hardhat network over HTTP JSON-RPC, as `hardhat node` does: the indexer talks to it exactly
 * as to a remote node, while the test deploys and snapshots through the in-process connection (Ignition keeps no
 * journal for in-process networks, so every run deploys afresh).
 */
export async function serveJsonRpc(provider: EthereumProvider): Promise<JsonRpcBridge> {
  const requests: JsonRpcRequest[] = [];
  const rewrites = new Map<string, (result: unknown) => unknown>();
  let failures = 0;

  const answer = async ({ id, method, params }: JsonRpcRequest) => {
    requests.push({ id, method, params });
    try {
      const result = await provider.request({ method, params });
      return { jsonrpc: "2.0", id, result: rewrites.get(method)?.(result) ?? result };
    } catch (error) {
      const { code, message, data } = error as { code?: number; message: string; data?: unknown };
      return { jsonrpc: "2.0", id, error: { code: code ?? -32603, message, data } };
    }
  };

  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (failures > 0) {
      failures--;
      response.writeHead(503).end("overloaded");
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as JsonRpcRequest | JsonRpcRequest[];
    const result = Array.isArray(body) ? await Promise.all(body.map(answer)) : await answer(body);
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(result));
  });
  // Idle connections stay open until close(): with Node's 5 s keep-alive timeout, a client that reuses a connection the
  // moment the server drops it reads ECONNRESET, a failure of the bridge, not of the code under test.
  server.keepAliveTimeout = 0;
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    failNext(count) {
      failures = count;
    },
    tamper(method, rewrite) {
      if (rewrite === undefined) rewrites.delete(method);
      else rewrites.set(method, rewrite);
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}
