import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import Koa from "koa";
import { pino } from "pino";
import { errorHandler } from "../../relayer/http/error-handler.js";
import { closeGracefully, InFlightRequests } from "../../relayer/http/in-flight.js";
import { ErrorBodySchema } from "../../relayer/schemas/error.js";

/** A server whose /slow requests run until the test releases them; /fast answers at once. */
async function serverWithSlowRequests() {
  const inFlight = new InFlightRequests();
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const slowEntered = new Promise<void>((resolve) => (entered = resolve));
  const app = new Koa();
  app.use(errorHandler(pino({ level: "silent" })));
  app.use(inFlight.middleware());
  app.use(async (ctx) => {
    if (ctx.path === "/slow") {
      entered();
      await released;
    }
    ctx.body = { done: ctx.path };
  });
  const server = http.createServer(app.callback()).listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const get = async (path: string) => {
    const response = await fetch(url + path);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  return { inFlight, server, get, release, slowEntered };
}

/** Whether `promise` rejects (here: the connection was refused or dropped). */
const rejects = (promise: Promise<unknown>) => promise.then(
  () => false,
  () => true,
);

describe("relayer: graceful shutdown", function () {
  let running: Awaited<ReturnType<typeof serverWithSlowRequests>>;
  afterEach(function () {
    running.release();
    running.server.closeAllConnections();
    running.server.close();
  });

  it("answers new requests with 503 SHUTTING_DOWN once draining, and waits for the request in flight", async function () {
    running = await serverWithSlowRequests();
    const slow = running.get("/slow");
    await running.slowEntered;
    expect(running.inFlight.count).to.equal(1);

    const drained = running.inFlight.drain(60_000);
    const refused = await running.get("/fast");
    expect(refused.status).to.equal(503);
    expect(ErrorBodySchema.parse(refused.body)).to.deep.include({ code: "SHUTTING_DOWN" });

    running.release();
    expect(await slow).to.deep.equal({ status: 200, body: { done: "/slow" } });
    expect(await drained, "nothing abandoned").to.equal(0);
  });

  it("stops accepting connections, lets the request in flight finish, then closes", async function () {
    running = await serverWithSlowRequests();
    const slow = running.get("/slow");
    await running.slowEntered;

    const closed = closeGracefully(running.server, running.inFlight, 60_000);
    expect(await rejects(running.get("/fast")), "a new connection is refused").to.equal(true);
    running.release();
    expect((await slow).status).to.equal(200);
    expect(await closed).to.equal(0);
    expect(running.server.listening).to.equal(false);
  });

  it("abandons a request still running after the grace period and drops its connection", async function () {
    running = await serverWithSlowRequests();
    const slow = running.get("/slow");
    await running.slowEntered;

    expect(await closeGracefully(running.server, running.inFlight, 50)).to.equal(1);
    expect(await rejects(slow), "the abandoned request gets no answer").to.equal(true);
    expect(running.server.listening).to.equal(false);
  });
});
