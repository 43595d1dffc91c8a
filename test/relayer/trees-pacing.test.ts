import { expect } from "chai";
import { RelayerError } from "../../relayer/errors.js";
import { BulkAnswerPacer, PACED_MAX_WAIT_MS, PACED_MIN_BYTES } from "../../relayer/http/trees-pacing.js";

const MiB = 1024 * 1024;

/** A pacer on a clock the test moves by hand. */
function pacerOf(bytesPerSecond: number) {
  let now = 0;
  const pacer = new BulkAnswerPacer(bytesPerSecond, () => now);
  return {
    pacer,
    advance(ms: number) {
      now += ms;
    },
  };
}

describe("BulkAnswerPacer: the trees route's bandwidth budget", function () {
  it("lets a second's worth go at once, then spaces the next bulk answers by their size over the budget", function () {
    const { pacer } = pacerOf(10 * MiB);
    expect(pacer.reserve(4 * MiB)).to.equal(0);
    expect(pacer.reserve(6 * MiB)).to.equal(0);
    // The budget is spent: each next answer waits for its own bytes, behind those promised before it.
    expect(pacer.reserve(5 * MiB)).to.equal(500);
    expect(pacer.reserve(5 * MiB)).to.equal(1_000);
  });

  it("refills with time, never beyond one second's worth", function () {
    const { pacer, advance } = pacerOf(10 * MiB);
    pacer.reserve(10 * MiB);
    advance(300);
    expect(pacer.reserve(3 * MiB)).to.be.at.most(1e-9);
    advance(60_000);
    expect(pacer.reserve(10 * MiB)).to.equal(0);
    expect(pacer.reserve(1 * MiB)).to.equal(100);
  });

  it("never holds back a warm agent's answer, however spent the budget is", function () {
    const { pacer } = pacerOf(MiB);
    pacer.reserve(5 * MiB);
    expect(pacer.reserve(PACED_MIN_BYTES - 1)).to.equal(0);
    expect(pacer.reserve(PACED_MIN_BYTES)).to.be.greaterThan(0);
  });

  it("refuses, taking nothing, an answer that would wait longer than the most it may, with the seconds until it may not", function () {
    const { pacer, advance } = pacerOf(MiB);
    const spent = pacer.reserve(MiB * (1 + PACED_MAX_WAIT_MS / 1000));
    expect(spent).to.equal(PACED_MAX_WAIT_MS);
    let refusal: unknown;
    try {
      pacer.reserve(2 * MiB);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).to.be.instanceOf(RelayerError);
    expect((refusal as RelayerError).code).to.equal("RATE_LIMITED");
    expect((refusal as RelayerError).status).to.equal(429);
    expect((refusal as RelayerError).retryAfterSeconds).to.equal(2);
    expect((refusal as RelayerError).message).to.match(/fetch only the leaves after those you hold/);
    // Nothing was taken: once those two seconds have passed, the same answer waits exactly the most it may.
    advance(2_000);
    expect(pacer.reserve(2 * MiB)).to.equal(PACED_MAX_WAIT_MS);
  });
});
