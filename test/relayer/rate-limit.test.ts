import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import Koa from "koa";
import { pino } from "pino";
import { errorHandler } from "../../relayer/http/error-handler.js";
import { jsonBody } from "../../relayer/http/json-body.js";
import { RateLimiter, type RateLimits } from "../../relayer/http/rate-limit.js";
import { ErrorBodySchema } from "../../relayer/schemas/error.js";
import { nullifierHashOf } from "../../sdk/index.js";

/** The relayer's middleware order around a handler that always succeeds, on a clock the test moves by hand. */
async function limitedApp(limits: RateLimits) {
  let now = 0;
  const limiter = new RateLimiter(limits, () => now);
  const app = new Koa();
  app.use(errorHandler(pino({ level: "silent" })));
  app.use(limiter.globalLimit());
  app.use(jsonBody());
  app.use(limiter.perNoteLimit());
  app.use((ctx) => {
    ctx.body = { admitted: true };
  });
  const server = http.createServer(app.callback()).listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    limiter,
    advance(ms: number) {
      now += ms;
    },
    async post(body: unknown) {
      const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      return { status: response.status, retryAfter: response.headers.get("retry-after"), body: (await response.json()) as Record<string, unknown> };
    },
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

describe("relayer: rate limits without client identities", function () {
  let app: Awaited<ReturnType<typeof limitedApp>>;
  afterEach(function () {
    app?.close();
  });

  it("admits one second's worth of requests across all callers, then answers 429 with Retry-After until tokens refill", async function () {
    app = await limitedApp({ globalPerSecond: 3, perNotePerMinute: 1000 });
    for (let i = 0; i < 3; i++) expect((await app.post({})).status).to.equal(200);
    const refused = await app.post({});
    expect(refused.status).to.equal(429);
    expect(refused.retryAfter).to.equal("1");
    expect(ErrorBodySchema.parse(refused.body)).to.deep.include({ code: "RATE_LIMITED" });
    expect(refused.body.error).to.contain("3 requests per second").and.contain("retry in 1 s");
    app.advance(1000 / 3 + 1);
    expect((await app.post({})).status).to.equal(200);
    expect((await app.post({})).status).to.equal(429);
  });

  it("limits each note by its nullifier hash, whichever field of the body names it", async function () {
    app = await limitedApp({ globalPerSecond: 1000, perNotePerMinute: 2 });
    const nullifier = "123456789";
    expect((await app.post({ serviceDeposit: { nullifier } })).status).to.equal(200);
    expect((await app.post({ nullifier })).status).to.equal(200);
    const refused = await app.post({ nullifierHash: nullifierHashOf(123456789n).toString() });
    expect(refused.status).to.equal(429);
    expect(refused.retryAfter).to.equal("30");
    expect(refused.body).to.deep.include({ code: "RATE_LIMITED" });
    expect(refused.body.error).to.contain("2 requests per minute");

    expect((await app.post({ serviceDeposit: { nullifier: "987654321" } })).status, "another note has its own bucket").to.equal(200);
    for (const malformed of ["abc", "-1", (1n << 256n).toString(), 123456789]) {
      expect((await app.post({ nullifier: malformed })).status, `${malformed} names no note; the schema refuses it next`).to.equal(200);
    }
    app.advance(30_000);
    expect((await app.post({ nullifier })).status).to.equal(200);
    expect((await app.post({ nullifier })).status).to.equal(429);
  });

  it("forgets the notes whose buckets have refilled, so memory stays bounded", async function () {
    app = await limitedApp({ globalPerSecond: 1000, perNotePerMinute: 1 });
    for (let i = 1; i <= 50; i++) await app.post({ nullifier: String(i) });
    expect(app.limiter.trackedNotes).to.equal(50);
    app.advance(60_000);
    await app.post({ nullifier: "51" });
    expect(app.limiter.trackedNotes).to.equal(1);
  });
});
