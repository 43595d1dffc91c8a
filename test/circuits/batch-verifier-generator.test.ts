import { expect } from "chai";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { generateBatchVerifier, parseVerificationKey } from "../../scripts/circuits/batch-verifier.js";
import { REPO_ROOT } from "../../scripts/circuits/compile.js";
import { WITHDRAW_ARTIFACTS } from "../../sdk/index.js";

// The number of public signals changes with the circuit: the generator must follow the key, never assume a count.
describe("batch verifier generator", function () {
  let dir: string;
  let vkey: Record<string, unknown> & { IC: unknown[] };
  let proofLib: string;

  before(async function () {
    dir = await mkdtemp(path.join(os.tmpdir(), "batch-verifier-"));
    vkey = JSON.parse(await readFile(WITHDRAW_ARTIFACTS.vkey, "utf8"));
    proofLib = await readFile(path.join(REPO_ROOT, "contracts", "lib", "ProofLib.sol"), "utf8");
  });

  after(async function () {
    await rm(dir, { recursive: true, force: true });
  });

  /** The committed key cut down to its first `n` public signals, as a file. */
  async function keyWith(n: number): Promise<string> {
    const file = path.join(dir, `vkey-${n}.json`);
    await writeFile(file, JSON.stringify({ ...vkey, nPublic: n, IC: vkey.IC.slice(0, n + 1) }));
    return file;
  }

  /** ProofLib.sol with `n` public signals, as a file. */
  async function proofLibWith(n: number): Promise<string> {
    const file = path.join(dir, `ProofLib-${n}.sol`);
    await writeFile(file, proofLib.replace(/uint256\[\d+\] pubSignals;/, `uint256[${n}] pubSignals;`));
    return file;
  }

  it("sizes the verifier by the key's number of public signals", async function () {
    const source = await generateBatchVerifier(await keyWith(6), await proofLibWith(6));
    expect(source).to.contain("PROOF_SIZE = 0x1c0;"); // (8 coordinate words + 6 signals) * 32 bytes
    expect(source).to.contain("IC6_Y").and.not.contain("IC7_X");
    expect(source.match(/^ *ok := and\(ok, .*, R\)\)$/gm)).to.have.length(6); // one range check per signal
    expect(source.match(/^ *g1MulAcc\(mIn, pair, IC\d_X/gm)).to.have.length(6);
  });

  it("refuses a key whose number of public signals is not ProofLib's", async function () {
    await assert.rejects(generateBatchVerifier(await keyWith(6)), /ProofLib.WithdrawProof has 7 public signals, the verification key 6/);
  });

  it("refuses a key of another protocol, a missing IC point or a point off the curve", function () {
    expect(() => parseVerificationKey({ ...vkey, protocol: "plonk" })).to.throw(/not a Groth16 BN254/);
    expect(() => parseVerificationKey({ ...vkey, IC: vkey.IC.slice(1) })).to.throw(new RegExp(`IC: expected ${vkey.IC.length} points`));
    expect(() => parseVerificationKey({ ...vkey, vk_alpha_1: ["1", "3", "1"] })).to.throw(/vk_alpha_1: not on the curve/);
  });
});
