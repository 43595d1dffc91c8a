import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { tmpdir } from "node:os";
import type { VerificationKey } from "snarkjs";
import { LocalProver, builtNativeProver } from "../../sdk/prover/index.js";
import { buildWithdrawInput, loadVerificationKey, verifyWithdrawal, type WithdrawCircuitInput } from "../../sdk/index.js";
import { atDepth } from "../helpers/deep-path.js";
import { buildWithdrawScenario } from "../helpers/withdraw-scenario.js";

/** A valid withdrawal with random secrets, its paths at `depth`. */
function inputAtDepth(depth: number): WithdrawCircuitInput {
  const field = () => BigInt(`0x${randomBytes(31).toString("hex")}`);
  const { request } = buildWithdrawScenario({
    value: 5_000_000n,
    withdrawnValue: 1_250_000n,
    label: field(),
    secrets: { nullifier: field(), secret: field() },
    context: field(),
  });
  return buildWithdrawInput(atDepth(request, depth, field()));
}

describe("LocalProver (sdk/prover): an agent's engine, native when built, wasm otherwise", function () {
  let verificationKey: VerificationKey;
  const provers: LocalProver[] = [];
  const started = (prover: LocalProver) => (provers.push(prover), prover);

  before(async function () {
    verificationKey = await loadVerificationKey();
  });

  after(async function () {
    await Promise.all(provers.map((prover) => prover.close()));
  });

  it("proves the same input with the native prover and with the wasm engine: both proofs verify, with the same public signals", async function () {
    if (!builtNativeProver()) this.skip(); // `npm ci` without a compiler: the fallback is tested below
    const native = started(new LocalProver());
    const wasm = started(new LocalProver({ native: "wasm" }));
    expect(native.engine).to.equal("native");
    expect(wasm.engine).to.equal("wasm");
    const input = inputAtDepth(12);
    const [byNative, byWasm] = [await native.prove(input), await wasm.prove(input)];
    expect(byNative.engine).to.equal("native");
    expect(byWasm.engine).to.equal("wasm");
    expect(byNative.publicSignals).to.deep.equal(byWasm.publicSignals);
    expect(byNative.proof.pi_a).to.not.deep.equal(byWasm.proof.pi_a); // two provers, two blindings
    expect(await verifyWithdrawal(byNative, verificationKey)).to.equal(true);
    expect(await verifyWithdrawal(byWasm, verificationKey)).to.equal(true);
  });

  it("falls back to the wasm engine when the native prover is absent, and says so in the proof", async function () {
    const refusals: string[] = [];
    const missing = path.join(tmpdir(), `no-such-prover-${randomBytes(4).toString("hex")}`);
    const prover = started(new LocalProver({ native: missing, onNativeRefused: (reason) => refusals.push(reason) }));
    const proof = await prover.prove(inputAtDepth(3));
    expect(proof.engine).to.equal("wasm");
    expect(await verifyWithdrawal(proof, verificationKey)).to.equal(true);
    expect(refusals.join("\n")).to.include("ENOENT");
    expect(prover.engine).to.equal("wasm"); // the dead native prover is not tried again
    expect((await prover.prove(inputAtDepth(5))).engine).to.equal("wasm");
    expect(refusals).to.have.length(1);
  });

  it("says once per process, on stderr, that it proves with the wasm engine for want of a native prover, and how to build one", function () {
    // A process of its own: the notice is once per process, as an agent's log would show it.
    const script = `import { tellWasmFallbackOnce } from "./sdk/prover/wasm-fallback-notice.ts"; tellWasmFallbackOnce(); tellWasmFallbackOnce();`;
    const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8" });
    expect(run.status).to.equal(0);
    expect(run.stderr.match(/X402_PRIVACY_SDK_WASM_PROVER/g)).to.have.length(1);
    expect(run.stderr).to.include("proves with the wasm engine").and.include("node node_modules/x402-privacy-sdk/native-prover/build.mjs");
  });
});
