import { expect } from "chai";
import { chmod, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import type { VerificationKey } from "snarkjs";
import { RelayerError } from "../../relayer/errors.js";
import { ProverService, type ProverServiceOptions } from "../../relayer/prover/prover-service.js";
import { buildWithdrawInput, loadVerificationKey, proveWithdrawal, verifyWithdrawal } from "../../sdk/index.js";
import { buildWithdrawScenario, type ScenarioOptions } from "../helpers/withdraw-scenario.js";

const inputFor = (overrides: Partial<ScenarioOptions> = {}) => buildWithdrawInput(buildWithdrawScenario(overrides).request);
const silent = pino({ level: "silent" });

/** What a rejected promise rejected with. */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail("expected a rejection"),
    (error: unknown) => error,
  );
}

/**
 * A rapidsnark stand-in: an executable node script called as `<bin> <zkey> <wtns> <proof> <public>` that
 * appends a line to `calls` each run and writes what `body` computes (it has `snarkjs` and the four paths).
 */
async function fakeNativeProver(dir: string, name: string, body: string): Promise<{ binary: string; calls: () => Promise<number> }> {
  const binary = path.join(dir, `${name}.mjs`);
  const calls = path.join(dir, `${name}.calls`);
  await writeFile(
    binary,
    [
      `#!${process.execPath}`,
      `import { appendFileSync, writeFileSync } from "node:fs";`,
      `import * as snarkjs from ${JSON.stringify(import.meta.resolve("snarkjs"))};`,
      `const [zkey, wtns, proofPath, publicPath] = process.argv.slice(2);`,
      `appendFileSync(${JSON.stringify(calls)}, "proved\\n");`,
      body,
      // snarkjs keeps its worker threads alive: leave once the files are written.
      `process.exit(0);`,
    ].join("\n"),
  );
  await chmod(binary, 0o755);
  return { binary, calls: async () => (await readFile(calls, "utf8").catch(() => "")).split("\n").filter(Boolean).length };
}

describe("relayer prover service", function () {
  let verificationKey: VerificationKey;
  const services: ProverService[] = [];
  const start = (options: Partial<ProverServiceOptions> = {}) => {
    const service = new ProverService({ maxQueued: 16, ...options }, silent);
    services.push(service);
    return service;
  };

  before(async function () {
    verificationKey = await loadVerificationKey();
  });

  after(async function () {
    await Promise.all(services.map((service) => service.close()));
  });

  describe("in process", function () {
    let prover: ProverService;

    before(function () {
      prover = start({ prover: "wasm" });
    });

    it("proves what snarkjs fullProve proves: the proof verifies and the public signals are the same", async function () {
      const input = inputFor();
      const [ours, plain] = [await prover.prove(input), await proveWithdrawal(input)];
      expect(await verifyWithdrawal(ours, verificationKey)).to.equal(true);
      expect(ours.publicSignals).to.deep.equal(plain.publicSignals);
      expect(ours.proof).to.include({ protocol: "groth16", curve: "bn128" });
    });

    it("proves concurrent requests, each against its own input", async function () {
      const inputs = [1_000_000n, 2_000_000n, 3_000_000n].map((withdrawnValue) => inputFor({ withdrawnValue }));
      const proofs = await Promise.all(inputs.map((input) => prover.prove(input)));
      for (const [i, proof] of proofs.entries()) {
        expect(await verifyWithdrawal(proof, verificationKey)).to.equal(true);
        expect(proof.publicSignals).to.deep.equal((await proveWithdrawal(inputs[i]!)).publicSignals);
      }
    });

    it("answers INVALID_PROOF for an input that admits no witness, without echoing it, and proves the next one", async function () {
      const secret = "987654321987654321";
      const error = await rejectionOf(prover.prove({ ...inputFor(), existingSecret: secret }));
      expect(error).to.be.instanceOf(RelayerError).and.include({ code: "INVALID_PROOF", status: 422 });
      expect(JSON.stringify({ message: (error as Error).message, extra: (error as RelayerError).extra })).not.to.include(secret);
      expect(await verifyWithdrawal(await prover.prove(inputFor()), verificationKey)).to.equal(true);
    });
  });

  it("answers PROVER_BUSY with a Retry-After at once when the queue is full, and proves what it took", async function () {
    const prover = start({ maxQueued: 1, prover: "wasm" });
    let settled = 0;
    const taken = [prover.prove(inputFor()), prover.prove(inputFor({ withdrawnValue: 2_000_000n }))].map((proof) => proof.finally(() => settled++));
    const busy = await rejectionOf(prover.prove(inputFor()));
    expect(settled, "the refusal waited for a proof").to.equal(0);
    expect(busy).to.be.instanceOf(RelayerError).and.include({ code: "PROVER_BUSY", status: 503 });
    expect((busy as RelayerError).retryAfterSeconds).to.be.a("number").and.at.least(1);
    for (const proof of await Promise.all(taken)) expect(await verifyWithdrawal(proof, verificationKey)).to.equal(true);
  });

  describe("with a native prover", function () {
    let dir: string;

    before(async function () {
      dir = await mkdtemp(path.join(tmpdir(), "fake-rapidsnark-"));
    });

    it("proves with a binary whose first proof verifies, and keeps proving with it", async function () {
      const native = await fakeNativeProver(
        dir,
        "delegating",
        `const { proof, publicSignals } = await snarkjs.groth16.prove(zkey, wtns);
writeFileSync(proofPath, JSON.stringify(proof));
writeFileSync(publicPath, JSON.stringify(publicSignals));`,
      );
      const prover = start({ nativeProverPath: native.binary });
      for (const withdrawnValue of [1_000_000n, 2_000_000n]) {
        expect(await verifyWithdrawal(await prover.prove(inputFor({ withdrawnValue })), verificationKey)).to.equal(true);
      }
      expect(await native.calls()).to.equal(2);
    });

    it("answers a valid proof made in process each time the binary's proof does not verify", async function () {
      const native = await fakeNativeProver(
        dir,
        "bogus",
        `const generator = ["1", "2", "1"];
writeFileSync(proofPath, JSON.stringify({ pi_a: generator, pi_b: [["1", "0"], ["1", "0"], ["1", "0"]], pi_c: generator, protocol: "groth16", curve: "bn128" }));
writeFileSync(publicPath, JSON.stringify(Array(8).fill("0")));`,
      );
      const prover = start({ nativeProverPath: native.binary });
      const input = inputFor();
      const proof = await prover.prove(input);
      expect(await verifyWithdrawal(proof, verificationKey)).to.equal(true);
      expect(proof.publicSignals).to.deep.equal((await proveWithdrawal(input)).publicSignals);
      expect(await verifyWithdrawal(await prover.prove(inputFor({ withdrawnValue: 2_000_000n })), verificationKey)).to.equal(true);
      expect(await native.calls(), "each proof was tried natively, then checked").to.equal(2);
    });
  });

  it("ends its workers on close(): proofs in flight and later ones are refused", async function () {
    const prover = start({ prover: "wasm" });
    const inFlight = rejectionOf(prover.prove(inputFor()));
    await prover.close();
    expect(await inFlight).to.be.instanceOf(Error);
    expect(await rejectionOf(prover.prove(inputFor()))).to.be.instanceOf(Error).with.property("message").that.matches(/closed/);
  });
});
