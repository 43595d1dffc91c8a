import { expect } from "chai";
import { hexlify, randomBytes } from "ethers";
import { MemoryServedPayments } from "../../seller/index.js";
import { ServeOnce } from "../../seller/serve-once.js";

/** Two instances of a seller sharing one record of served payments, on a clock the test moves. */
describe("ServeOnce: a payment's lease is held for as long as its request is handled, and confirmed before it settles", function () {
  let now = 1_900_000_000;
  const clock = () => now;
  const payloadOf = () => ({ nullifiers: [hexlify(randomBytes(32))], validBefore: String(now + 600) });

  it("settles nothing for a request whose lease another took over after it lapsed: the request holding it now settles", async function () {
    const served = new MemoryServedPayments(clock);
    const [first, second] = [new ServeOnce(served, 120, clock), new ServeOnce(served, 120, clock)];
    const payload = payloadOf();
    expect(await first.begin(payload)).to.equal(undefined);
    // The first instance lost the record for longer than the lease (no renewal landed); the payment is presented again.
    now += 121;
    expect(await second.begin(payload)).to.equal(undefined);
    expect(await first.confirm(payload)).to.deep.include({ abort: true, reason: "shielded_payment_in_progress" });
    expect(await second.confirm(payload)).to.equal(undefined);
    await second.finish(payload);
    expect(await first.begin(payload)).to.deep.include({ reason: "invalid_shielded_payment_already_used" });
  });

  it("confirms a lease still held however long the request took, and renews it for the settle", async function () {
    const served = new MemoryServedPayments(clock);
    const [holder, other] = [new ServeOnce(served, 120, clock), new ServeOnce(served, 120, clock)];
    const payload = payloadOf();
    expect(await holder.begin(payload)).to.equal(undefined);
    now += 100;
    expect(await holder.confirm(payload)).to.equal(undefined);
    now += 100;
    expect(await other.begin(payload), "renewed by the confirmation").to.deep.include({ reason: "shielded_payment_in_progress" });
    await holder.finish(payload);
    expect(await other.begin(payload)).to.deep.include({ reason: "invalid_shielded_payment_already_used" });
  });

  it("answers a record it cannot reach at the settle with a retryable reason, and settles nothing", async function () {
    const served = new MemoryServedPayments(clock);
    const serveOnce = new ServeOnce(served, 120, clock);
    const payload = payloadOf();
    expect(await serveOnce.begin(payload)).to.equal(undefined);
    served.renew = () => Promise.reject(new Error("connection refused"));
    expect(await serveOnce.confirm(payload)).to.deep.include({ abort: true, reason: "shielded_seller_unavailable" });
  });

  it("keeps writing a served mark the record refused twice, the payment held meanwhile, until it lands", async function () {
    const served = new MemoryServedPayments(clock);
    const [holder, other] = [new ServeOnce(served, 120, clock), new ServeOnce(served, 120, clock)];
    const payload = payloadOf();
    expect(await holder.begin(payload)).to.equal(undefined);
    const finish = served.finish.bind(served);
    let refusals = 3;
    served.finish = (id) => (refusals-- > 0 ? Promise.reject(new Error("connection refused")) : finish(id));
    await holder.finish(payload);
    expect(await other.begin(payload), "not yet recorded, still held").to.deep.include({ reason: "shielded_payment_in_progress" });
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await other.begin(payload), "recorded by a later try").to.deep.include({ reason: "invalid_shielded_payment_already_used" });
  });
});
