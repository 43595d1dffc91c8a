import type http from "node:http";
import { listenLocal } from "../../x402-peers/local-server.js";

export interface SendTripwire {
  url: string;
  /** The hashes of the transactions the chain accepted through it. */
  sent: string[];
  close(): Promise<void>;
}

async function readBody(request: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * A JSON-RPC proxy in front of `rpcUrl` that runs `onSent` once the chain has accepted a transaction sent through
 * it (eth_sendRawTransaction answered with a hash), before the answer goes back: a test kills the sender there,
 * between its send and the receipt.
 */
export async function startSendTripwire(rpcUrl: string, onSent: (hash: string) => void | Promise<void>): Promise<SendTripwire> {
  const sent: string[] = [];
  const server = await listenLocal((request, response) => {
    void (async () => {
      const body = await readBody(request);
      const forwarded = await fetch(rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
      const text = await forwarded.text();
      const calls = [JSON.parse(body)].flat() as { id: unknown; method: string }[];
      const answers = [JSON.parse(text)].flat() as { id: unknown; result?: unknown }[];
      for (const call of calls.filter(({ method }) => method === "eth_sendRawTransaction")) {
        const hash = answers.find(({ id }) => id === call.id)?.result;
        if (typeof hash !== "string") continue;
        sent.push(hash);
        await onSent(hash);
      }
      response.writeHead(forwarded.status, { "content-type": "application/json" }).end(text);
    })().catch(() => response.destroy());
  });
  return { url: server.url, sent, close: () => server.close() };
}
