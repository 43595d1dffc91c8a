import { expect } from "chai";
import { REFERENCE_CLOCK_SLACK_SECONDS, RequestReferences, type ReferencedRequest } from "../../seller/index.js";

const SECRET = new Uint8Array(32).fill(7);
const REQUEST: ReferencedRequest = { method: "GET", path: "/weather", payTo: "0x00000000000000000000000000000000000000aA", amount: "50000" };

describe("a seller's request references", function () {
  let now = 1_900_000_000;
  const references = () => new RequestReferences(SECRET, () => now);

  it("vouches for a payment of the request it was issued for whose window closes by its expiry, whenever presented", function () {
    const reference = references().issue(REQUEST, 60);
    expect(reference).to.match(/^0x[0-9a-f]{64}$/);
    const validBefore = now + 60;
    expect(references().problem(reference, REQUEST, validBefore)).to.equal(undefined);
    expect(references().problem(reference, { ...REQUEST, method: "get", payTo: REQUEST.payTo.toLowerCase() }, validBefore), "case does not matter").to.equal(undefined);
    // Presented again an hour later (a crash, an outage): the same payment is still vouched for.
    now += 3600;
    expect(references().problem(reference, REQUEST, validBefore)).to.equal(undefined);
    // A new payment made with the old reference outlasts it.
    expect(references().problem(reference, REQUEST, now + 30)).to.match(/outlasts its reference/);
    now -= 3600;
    expect(references().problem(reference, REQUEST, validBefore + REFERENCE_CLOCK_SLACK_SECONDS)).to.equal(undefined);
    expect(references().problem(reference, REQUEST, validBefore + REFERENCE_CLOCK_SLACK_SECONDS + 1)).to.match(/outlasts its reference/);
  });

  it("refuses it for another method, path, payee or price, under another secret, and any byte changed", function () {
    const reference = references().issue(REQUEST, 60);
    for (const other of [{ method: "POST" }, { path: "/forecast" }, { payTo: "0x00000000000000000000000000000000000000bB" }, { amount: "49999" }]) {
      expect(references().problem(reference, { ...REQUEST, ...other }, now + 60), JSON.stringify(other)).to.match(/not issued by this seller/);
    }
    expect(new RequestReferences(new Uint8Array(32).fill(8), () => now).problem(reference, REQUEST, now + 60)).to.match(/not issued by this seller/);
    for (const at of [2, 20, 40, 65]) {
      const flipped = reference.slice(0, at) + (reference[at] === "0" ? "1" : "0") + reference.slice(at + 1);
      expect(references().problem(flipped, REQUEST, now + 60), `hex digit ${at}`).to.not.equal(undefined);
    }
    expect(references().problem("0x1234", REQUEST, now + 60)).to.match(/not 32 bytes/);
  });

  it("issues a fresh reference every time, and needs a secret of 32 bytes", function () {
    expect(references().issue(REQUEST, 60)).to.not.equal(references().issue(REQUEST, 60));
    expect(() => new RequestReferences(new Uint8Array(16))).to.throw(RangeError);
  });
});
