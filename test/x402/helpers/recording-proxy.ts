import type http from "node:http";
import { listenLocal } from "../../../x402-peers/local-server.js";

/** One request the proxy forwarded: what the service behind it received. */
export interface RecordedRequest {
  method: string;
  /** Path and query. */
  url: string;
  body: string;
  /** The service's answer status, once it answered. */
  status?: number;
}

export interface RecordingProxy {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/** Changes a JSON answer of the service on its way back to the client (a lying facilitator); the answer as is when absent. */
export type AnswerRewrite = (path: string, answer: Record<string, unknown>) => Record<string, unknown>;

async function readBody(request: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * An HTTP proxy in front of `target` that records every request (method, path and body) before forwarding it, and
 * the status it was answered, so a test can read exactly what the service was sent; `rewrite` may change its JSON
 * answers.
 */
export async function startRecordingProxy(target: string, rewrite?: AnswerRewrite): Promise<RecordingProxy> {
  const requests: RecordedRequest[] = [];
  const server = await listenLocal((request, response) => {
    void (async () => {
      const body = await readBody(request);
      const recorded: RecordedRequest = { method: request.method!, url: request.url!, body };
      requests.push(recorded);
      const forwarded = await fetch(new URL(request.url!, target), {
        method: request.method,
        headers: { ...(request.headers["content-type"] === undefined ? {} : { "content-type": request.headers["content-type"] }) },
        body: body === "" ? undefined : body,
        redirect: "manual",
      });
      recorded.status = forwarded.status;
      let text = await forwarded.text();
      if (rewrite !== undefined && forwarded.ok) text = JSON.stringify(rewrite(new URL(request.url!, target).pathname, JSON.parse(text) as Record<string, unknown>));
      const headers: Record<string, string> = { "content-type": forwarded.headers.get("content-type") ?? "application/json" };
      const retryAfter = forwarded.headers.get("retry-after");
      if (retryAfter !== null) headers["retry-after"] = retryAfter;
      response.writeHead(forwarded.status, headers).end(text);
    })().catch((error: unknown) => response.writeHead(502).end(String(error)));
  });
  return { url: server.url, requests, close: () => server.close() };
}
