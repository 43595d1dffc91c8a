import { createHash, timingSafeEqual } from "node:crypto";
import type { Middleware } from "koa";
import { IndexerError } from "../errors.js";

const digest = (value: string) => createHash("sha256").update(value).digest();

/** Lets a request through only with `Authorization: Bearer <token>`; compares in constant time. */
export function bearerAuth(token: string): Middleware {
  const expected = digest(token);
  return async (ctx, next) => {
    const header = ctx.get("authorization");
    const presented = /^Bearer (\S+)$/i.exec(header)?.[1];
    if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
      ctx.set("WWW-Authenticate", 'Bearer realm="indexer"');
      throw new IndexerError(
        "UNAUTHORIZED",
        header === "" ? "missing bearer token: send Authorization: Bearer <INDEXER_TOKEN>" : "wrong bearer token",
      );
    }
    await next();
  };
}
