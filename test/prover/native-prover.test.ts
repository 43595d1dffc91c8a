import { expect } from "chai";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { pino } from "pino";
import * as snarkjs from "snarkjs";
import type { VerificationKey } from "snarkjs";
import { NativeProverProcess, builtNativeProver } from "../../sdk/prover/native-process.js";
import { ProverService } from "../../relayer/prover/prover-service.js";
import { WitnessCalculator, witnessValues } from "../../sdk/prover/witness.js";
import { FIELD_ELEMENT_BYTES } from "../../sdk/prover/proving-key.js";
import { MAX_TREE_DEPTH, WITHDRAW_ARTIFACTS, WITHDRAW_PUBLIC_SIGNALS, buildWithdrawInput, loadVerificationKey, verifyWithdrawal, type WithdrawCircuitInput } from "../../sdk/index.js";
import { atDepth } from "../helpers/deep-path.js";
import { buildWithdrawScenario } from "../helpers/withdraw-scenario.js";

const run = promisify(execFile);
const BUILD_SCRIPT = new URL("../../sdk/native-prover/build.mjs", import.meta.url).pathname;
const N_PUBLIC = WITHDRAW_PUBLIC_SIGNALS.length;

/** A random valid withdrawal: random note, amounts and paths of random depth. */
function randomInput(): WithdrawCircuitInput {
  const field = () => BigInt(`0x${randomBytes(31).toString("hex")}`);
  const value = 1_000_000n + BigInt(randomBytes(4).readUInt32LE());
  const { request } = buildWithdrawScenario({
    value,
    withdrawnValue: 1n + (value * BigInt(randomBytes(1)[0]!)) / 256n,
    label: field(),
    secrets: { nullifier: field(), secret: field() },
    context: field(),
  });
  return buildWithdrawInput(atDepth(request, 1 + (randomBytes(1)[0]! % MAX_TREE_DEPTH), field()));
}

/** The public signals a witness holds: signals 1..nPublic, as snarkjs reads them. */
function publicSignalsOf(wtns: Uint8Array): string[] {
  const values = witnessValues(wtns);
  return Array.from({ length: N_PUBLIC }, (_, i) =>
    Buffer.from(values.subarray((i + 1) * FIELD_ELEMENT_BYTES, (i + 2) * FIELD_ELEMENT_BYTES)).reverse().toString("hex"),
  ).map((hex) => BigInt(`0x${hex}`).toString());
}

/**
 * A native prover that misbehaves: the real binary behind a node relay that runs `onFrame` on each witness frame
 * (a Buffer `frame`: length prefix and .wtns bytes) before passing it on.
 */
async function relayedProver(dir: string, name: string, onFrame: string): Promise<string> {
  const relay = path.join(dir, `${name}.mjs`);
  await writeFile(
    relay,
    [
      `#!${process.execPath}`,
      `import { spawn } from "node:child_process";`,
      `const child = spawn(${JSON.stringify(builtNativeProver())}, process.argv.slice(2), { stdio: ["pipe", "inherit", "inherit"] });`,
      `let buffered = Buffer.alloc(0);`,
      `process.stdin.on("data", (chunk) => {`,
      `  buffered = Buffer.concat([buffered, chunk]);`,
      `  while (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32LE(0)) {`,
      `    const frame = Buffer.from(buffered.subarray(0, 4 + buffered.readUInt32LE(0)));`,
      `    buffered = buffered.subarray(frame.length);`,
      `    ${onFrame}`,
      `    child.stdin.write(frame);`,
      `  }`,
      `});`,
      `process.stdin.on("end", () => child.stdin.end());`,
      `child.on("exit", (code) => process.exit(code ?? 1));`,
    ].join("\n"),
  );
  await chmod(relay, 0o755);
  return relay;
}

describe("native prover (sdk/native-prover/)", function () {
  let binary: string;
  let verificationKey: VerificationKey;
  let calculator: WitnessCalculator;
  let native: NativeProverProcess;
  let dir: string;

  before(async function () {
    const built = builtNativeProver();
    // `npm ci` builds it when a C++ compiler is there; without one the relayer runs its wasm engine (tested below).
    if (!built) this.skip();
    binary = built;
    verificationKey = await loadVerificationKey();
    calculator = await WitnessCalculator.load(WITHDRAW_ARTIFACTS.wasm);
    native = new NativeProverProcess(binary, WITHDRAW_ARTIFACTS.zkey);
    await native.ready;
    dir = await mkdtemp(path.join(tmpdir(), "native-prover-"));
  });

  after(async function () {
    await native?.close();
  });

  it("proves 20 random valid witnesses: each verifies with snarkjs, with the witness' public signals", async function () {
    for (let i = 0; i < 20; i++) {
      const wtns = await calculator.calculate(randomInput());
      const proof = await native.prove(wtns);
      expect(proof.publicSignals).to.deep.equal(publicSignalsOf(wtns));
      expect(await verifyWithdrawal(proof, verificationKey), `witness ${i}`).to.equal(true);
    }
  });

  it("gives the public signals snarkjs' own prover gives for the same witness", async function () {
    const wtns = await calculator.calculate(randomInput());
    const file = path.join(dir, "same.wtns");
    await writeFile(file, wtns);
    const [ours, theirs] = [await native.prove(wtns), await snarkjs.groth16.prove(WITHDRAW_ARTIFACTS.zkey, file)];
    expect(ours.publicSignals).to.deep.equal(theirs.publicSignals);
  });

  it("proves alike in one call per proof (rapidsnark's command line), where H's bases are not prepared", async function () {
    const wtns = await calculator.calculate(randomInput());
    const [wtnsFile, proofFile, publicFile] = ["once.wtns", "once-proof.json", "once-public.json"].map((name) => path.join(dir, name));
    await writeFile(wtnsFile!, wtns);
    await run(binary, [WITHDRAW_ARTIFACTS.zkey, wtnsFile!, proofFile!, publicFile!]);
    const proof = { proof: JSON.parse(await readFile(proofFile!, "utf8")), publicSignals: JSON.parse(await readFile(publicFile!, "utf8")) };
    expect(proof.publicSignals).to.deep.equal(publicSignalsOf(wtns));
    expect(await verifyWithdrawal(proof, verificationKey)).to.equal(true);
  });

  it("keeps the key it prepared on disk, named by a digest of the zkey: a restart maps it, a damaged, cut or foreign file is made again", async function () {
    const cache = await mkdtemp(path.join(tmpdir(), "native-tables-"));
    // The same key but for a byte of its last section (the setup's contributions, which proving never reads).
    const otherZkey = path.join(dir, "other.zkey");
    const zkeyBytes = await readFile(WITHDRAW_ARTIFACTS.zkey);
    zkeyBytes[zkeyBytes.byteLength - 10]! ^= 1;
    await writeFile(otherZkey, zkeyBytes);
    const start = async (zkey = WITHDRAW_ARTIFACTS.zkey) => {
      const prover = new NativeProverProcess(binary, zkey, process.env, cache);
      try {
        const info = await prover.ready;
        expect(await verifyWithdrawal(await prover.prove(await calculator.calculate(randomInput())), verificationKey)).to.equal(true);
        return info.tableCached;
      } finally {
        await prover.close();
      }
    };
    expect(await start()).to.equal(false);
    const files = await readdir(cache);
    expect(files).to.have.length(1);
    expect(files[0]).to.match(/^prepared-key-[0-9a-f]{32}\.bin$/);
    expect(await start()).to.equal(true);
    const file = path.join(cache, files[0]!);
    const kept = await readFile(file);
    for (const damage of [(bytes: Buffer) => (bytes[bytes.byteLength >> 1]! ^= 1), (bytes: Buffer) => (bytes[100]! ^= 1)]) {
      const damaged = Buffer.from(kept);
      damage(damaged);
      await writeFile(file, damaged);
      expect(await start(), "a flipped bit in the arrays or the header").to.equal(false);
      expect(await readFile(file)).to.deep.equal(kept);
    }
    await writeFile(file, kept.subarray(0, kept.byteLength - 8));
    expect(await start(), "a cut file").to.equal(false);

    expect(await start(otherZkey), "another zkey").to.equal(false);
    const other = (await readdir(cache)).find((name) => path.join(cache, name) !== file)!;
    expect(await start(), "the first zkey's file is its own").to.equal(true);
    await writeFile(file, await readFile(path.join(cache, other)));
    expect(await start(), "another zkey's file under this one's name").to.equal(false);
    expect(await start()).to.equal(true);
  });

  it("proves with either kernel build (BMI2/ADX where the CPU has it, portable)", async function () {
    const portable = new NativeProverProcess(binary, WITHDRAW_ARTIFACTS.zkey, { ...process.env, GROTH16_PROVER_CPU: "portable" });
    try {
      expect((await portable.ready).cpu).to.equal("portable");
      expect(await verifyWithdrawal(await portable.prove(await calculator.calculate(randomInput())), verificationKey)).to.equal(true);
    } finally {
      await portable.close();
    }
  });

  it("turns a corrupted witness into a proof that fails verification", async function () {
    const wtns = await calculator.calculate(randomInput());
    const corrupted = Uint8Array.from(wtns);
    corrupted[corrupted.byteLength - 40]! ^= 1; // a private signal near the end, still below the field's order
    const proof = await native.prove(corrupted);
    expect(await verifyWithdrawal(proof, verificationKey)).to.equal(false);
  });

  it("never returns such a proof from the prover service: the check refuses it and the wasm engine proves again", async function () {
    // A native prover that corrupts each witness on its way in: the real binary behind a relay that flips a bit.
    const relay = await relayedProver(dir, "corrupting-prover", `if (frame.length > 44) frame[frame.length - 40] ^= 1;`);
    const warnings: string[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => warnings.push(line) });
    const service = new ProverService({ maxQueued: 2, nativeServerPath: relay }, logger);
    try {
      const proof = await service.prove(randomInput());
      expect(await verifyWithdrawal(proof, verificationKey)).to.equal(true);
      const refusals = warnings.map((line) => JSON.parse(line) as { msg: string; reason?: string }).filter((line) => line.msg.startsWith("native proof refused"));
      expect(refusals).to.have.length(1);
      expect(refusals[0]!.reason).to.include("does not verify");
    } finally {
      await service.close();
    }
  });

  it("proves with the wasm engine once the native prover dies, saying so", async function () {
    const relay = await relayedProver(dir, "dying-prover", `process.exit(3);`);
    const warnings: string[] = [];
    const service = new ProverService({ maxQueued: 2, nativeServerPath: relay }, pino({ level: "warn" }, { write: (line: string) => warnings.push(line) }));
    try {
      for (const input of [randomInput(), randomInput()]) expect(await verifyWithdrawal(await service.prove(input), verificationKey)).to.equal(true);
      expect(service.engine).to.equal("wasm");
      expect(warnings.join("\n")).to.include("the native prover exited");
    } finally {
      await service.close();
    }
  });

  it("refuses a truncated or foreign zkey with a clear error", async function () {
    const zkey = await readFile(WITHDRAW_ARTIFACTS.zkey);
    const truncated = path.join(dir, "truncated.zkey");
    await writeFile(truncated, zkey.subarray(0, Math.floor(zkey.byteLength / 2)));
    const foreign = path.join(dir, "foreign.zkey");
    const other = Buffer.from(zkey);
    other.write("wtns", 0); // another iden3 file kind
    await writeFile(foreign, other);
    const wtnsFile = path.join(dir, "any.wtns");
    await writeFile(wtnsFile, await calculator.calculate(randomInput()));
    const failure = async (zkeyPath: string) => {
      const error = await run(binary, [zkeyPath, wtnsFile, path.join(dir, "p.json"), path.join(dir, "q.json")]).then(
        () => expect.fail("expected the prover to refuse the key"),
        (e: { code: number; stderr: string }) => e,
      );
      expect(error.code).to.equal(1);
      return error.stderr;
    };
    expect(await failure(truncated)).to.match(/the zkey is truncated|has no section|wrong size/);
    expect(await failure(foreign)).to.include("the zkey is not a .zkey file");
    const served = new NativeProverProcess(binary, truncated);
    expect(await served.ready.then(() => "started", (error: Error) => error.message)).to.match(/exited.*zkey/);
  });
});

describe("native prover install without a compiler", function () {
  it("exits 0 and says so; the prover service then proves with the wasm engine", async function () {
    const out = await mkdtemp(path.join(tmpdir(), "native-build-"));
    const { stdout } = await run(process.execPath, [BUILD_SCRIPT], {
      env: { ...process.env, GROTH16_PROVER_CXX: path.join(out, "missing-g++"), GROTH16_PROVER_OUT: out },
    });
    expect(stdout).to.match(/native prover: not built \(no compiler .*missing-g\+\+\); proofs will use the wasm engine/);
    const missing = path.join(out, "groth16-prover");
    expect(await stat(missing).then(() => true, () => false)).to.equal(false);

    const service = new ProverService({ maxQueued: 2, nativeServerPath: missing }, pino({ level: "silent" }));
    try {
      const proof = await service.prove(buildWithdrawInput(buildWithdrawScenario().request));
      expect(await verifyWithdrawal(proof, await loadVerificationKey())).to.equal(true);
      expect(service.engine).to.equal("wasm");
    } finally {
      await service.close();
    }
  });
});
