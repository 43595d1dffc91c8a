import { expect } from "chai";
import { RelayerError } from "../../relayer/errors.js";
import { BulkAnswerPacer, PACED_MAX_WAIT_MS, PACED_MIN_BYTES } from "../../relayer/http/trees-pacing.js";

const MiB = 1024 * 1024;

/** A pacer on a clock the test moves by hand; `reserve` admits an answer of a size known at once, and settles it. */
function pacerOf(bytesPerSecond: number) {
  let now = 0;
  const pacer = new BulkAnswerPacer(bytesPerSecond, () => now);
  return {
    pacer,
    reserve: (bytes: number) => pacer.settle(pacer.admit(bytes), bytes),
    advance(ms: number) {
      now += ms;
    },
  };
}

describe("BulkAnswerPacer: the trees route's bandwidth budget", function () {
  it("lets a second's worth go at once, then spaces the next bulk answers by their size over the budget", function () {
    const { reserve } = pacerOf(10 * MiB);
    expect(reserve(4 * MiB)).to.equal(0);
    expect(reserve(6 * MiB)).to.equal(0);
    // The budget is spent: each next answer waits for its own bytes, behind those promised before it.
    expect(reserve(5 * MiB)).to.equal(500);
    expect(reserve(5 * MiB)).to.equal(1_000);
  });

  it("refills with time, never beyond one second's worth", function () {
    const { reserve, advance } = pacerOf(10 * MiB);
    reserve(10 * MiB);
    advance(300);
    expect(reserve(3 * MiB)).to.be.at.most(1e-9);
    advance(60_000);
    expect(reserve(10 * MiB)).to.equal(0);
    expect(reserve(1 * MiB)).to.equal(100);
  });

  it("never holds back a warm agent's answer, however spent the budget is", function () {
    const { reserve } = pacerOf(MiB);
    reserve(5 * MiB);
    expect(reserve(PACED_MIN_BYTES - 1)).to.equal(0);
    expect(reserve(PACED_MIN_BYTES)).to.be.greaterThan(0);
  });

  it("refuses, taking nothing, an answer that would wait longer than the most it may, with the seconds until it may not", function () {
    const { reserve, advance } = pacerOf(MiB);
    const spent = reserve(MiB * (1 + PACED_MAX_WAIT_MS / 1000));
    expect(spent).to.equal(PACED_MAX_WAIT_MS);
    let refusal: unknown;
    try {
      reserve(2 * MiB);
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
    expect(reserve(2 * MiB)).to.equal(PACED_MAX_WAIT_MS);
  });

  it("charges an admitted answer what it grew by once cut, never refusing it, and holds back no warm answer", function () {
    const { pacer } = pacerOf(10 * MiB);
    // Admitted at its size in the copy as it stood; the copy's refresh added 2 MiB, which wait behind the budget.
    const admitted = pacer.admit(10 * MiB);
    expect(pacer.settle(admitted, 12 * MiB)).to.equal(200);
    // Estimated warm, grown whole (a cold copy's first answer): admitted at once, then charged all of it.
    const cold = pacer.admit(PACED_MIN_BYTES - 1);
    expect(pacer.settle(cold, 100 * MiB)).to.be.greaterThan(PACED_MAX_WAIT_MS);
    // Past its budget by far, the pacer still lets a warm agent's answer go at once, and refuses the next bulk one.
    expect(pacer.settle(pacer.admit(1024), 1024)).to.equal(0);
    expect(() => pacer.admit(MiB)).to.throw(RelayerError);
  });
});
