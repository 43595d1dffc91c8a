import type { Middleware } from "koa";
import { RelayerError } from "../errors.js";

/** Largest request body accepted; the biggest legitimate body (settle-x402 with accepts) is a few KB. */
export const MAX_BODY_BYTES = 64 * 1024;

/** Reads a JSON body into ctx.request.body, refusing oversized, non-JSON and malformed bodies with a 4xx. */
export function jsonBody(maxBytes = MAX_BODY_BYTES): Middleware {
  return async (ctx, next) => {
    if (ctx.method !== "POST") return next();
    if (!ctx.is("application/json")) {
      throw new RelayerError("INVALID_REQUEST", "Send the body as JSON with Content-Type: application/json.");
    }
    const declared = Number(ctx.get("content-length") || 0);
    if (declared > maxBytes) throw tooLarge(maxBytes);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw tooLarge(maxBytes);
      chunks.push(chunk);
    }
    try {
      (ctx.request as { body?: unknown }).body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      throw new RelayerError("INVALID_REQUEST", "The body is not valid JSON.");
    }
    return next();
  };
}

function tooLarge(maxBytes: number): RelayerError {
  return new RelayerError("INVALID_REQUEST", `The body exceeds ${maxBytes} bytes.`, {}, 413);
}
