import { expect } from "chai";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import * as snarkjs from "snarkjs";
import { sha256File } from "../../sdk/circuit/artifacts.js";
import { compileCircom, REPO_ROOT, type CompiledCircuit } from "../../scripts/circuits/compile.js";
import { artifactPaths } from "../../scripts/circuits/export-artifacts.js";
import { assessProvingKey, productionShortfalls } from "../../scripts/circuits/key-trust.js";
import { readManifest } from "../../scripts/circuits/manifest.js";
import { judgeProvingKey } from "../../scripts/deploy/key-guard.js";
import { contribute } from "../../scripts/ceremony/contribute.js";
import { checkPhase1 } from "../../scripts/ceremony/phase1.js";
import { readTranscript, TRANSCRIPT_FILE, writeTranscript, type Transcript } from "../../scripts/ceremony/transcript.js";
import { verifyCeremony } from "../../scripts/ceremony/verify.js";
import { readZkeyContributions } from "../../scripts/ceremony/zkey-contributions.js";
import { runCommand } from "../helpers/run-command.js";

const TSX = path.join(REPO_ROOT, "node_modules", ".bin", "tsx");
const TINY_CIRCUIT = path.join(REPO_ROOT, "test", "circuits", "fixtures", "ceremony-tiny.circom");
const BEACON = "8f3a2c1d0e9b7a6f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a098f7e";
const PARTIES = ["Alice", "Bob", "Carol"];

/** `npm run ceremony -- <args>` as a party runs it: its own process, `stdin` piped in. */
function ceremony(args: string[], stdin = "") {
  return runCommand(TSX, [path.join(REPO_ROOT, "scripts", "ceremony", "main.ts"), ...args], { stdin });
}

/** The checks of a verification that failed, by name. */
async function failedChecks(options: Parameters<typeof verifyCeremony>[0]): Promise<string[]> {
  const { ok, checks } = await verifyCeremony(options);
  const failed = checks.filter((check) => !check.ok).map((check) => `${check.check}: ${check.detail}`);
  expect(ok).to.equal(failed.length === 0);
  return failed;
}

describe("trusted-setup ceremony (npm run ceremony) on a tiny circuit", function () {
  let work: string;
  let circuit: CompiledCircuit;
  let ptau: string;
  let dir: string;
  let transcript: Transcript;
  const outputs: string[] = [];
  // What Alice types: it must reach no file and no output.
  const aliceEntropy = `alice-typed-${randomBytes(12).toString("hex")}`;
  const quiet = () => {};

  before(async function () {
    work = await mkdtemp(path.join(os.tmpdir(), "ceremony-"));
    await mkdir(path.join(work, "circuit"));
    circuit = await compileCircom(TINY_CIRCUIT, path.join(work, "circuit"), "O2");
    ptau = path.join(work, "pot5_dev.ptau");
    dir = path.join(work, "ceremony");
    const steps: { args: string[]; stdin?: string }[] = [
      { args: ["dev-phase1", "--power", "5", "--out", ptau] },
      { args: ["start", "--dir", dir, "--development", "--ptau", ptau, "--r1cs", circuit.r1cs] },
      ...PARTIES.map((name, i) => ({ args: ["contribute", "--dir", dir, "--name", name, ...(i === 0 ? ["--entropy"] : [])], stdin: aliceEntropy })),
      { args: ["beacon", "--dir", dir, "--value", BEACON, "--iterations", "10", "--source", "test beacon, announced nowhere"] },
      { args: ["finish", "--dir", dir, "--ptau", ptau, "--r1cs", circuit.r1cs, "--wasm", circuit.wasm, "--root", path.join(work, "out"), "--development"] },
    ];
    for (const { args, stdin } of steps) {
      const { code, output } = await ceremony(args, stdin);
      expect(code, `${args[0]}:\n${output}`).to.equal(0);
      outputs.push(output);
    }
    transcript = await readTranscript(path.join(dir, TRANSCRIPT_FILE));
  });

  after(async function () {
    await rm(work, { recursive: true, force: true });
  });

  it("records three contributions and the beacon alike in the transcript, the final zkey and the manifest", async function () {
    expect(transcript.steps.map((step) => step.kind)).to.deep.equal(["start", "contribution", "contribution", "contribution", "beacon"]);
    const [, ...phase2] = transcript.steps;
    const carried = await readZkeyContributions(path.join(dir, transcript.steps[4]!.output.file));
    expect(carried.map(({ name, hash }) => ({ name, hash }))).to.deep.equal(
      phase2.map((step) => ({ name: step.kind === "start" ? "" : step.name, hash: step.kind === "start" ? "" : step.contributionHash })),
    );
    expect(carried[3]!.beacon).to.deep.equal({ value: BEACON, iterationsExp: 10 });
    // Each party sees its contribution hash, to publish on its own.
    PARTIES.forEach((name, i) => expect(outputs[2 + i]).to.contain((phase2[i] as { contributionHash: string }).contributionHash));

    const paths = artifactPaths(path.join(work, "out"));
    const manifest = await readManifest(paths.manifest);
    expect(manifest.phase2.contributions).to.deep.equal(carried.slice(0, 3).map(({ name, hash }) => ({ name, hash })));
    expect(manifest.phase2.beacon).to.deep.equal({ name: carried[3]!.name, hash: carried[3]!.hash, value: BEACON, iterationsExp: 10, source: "test beacon, announced nowhere" });
    expect(manifest.phase2.transcript).to.deep.equal({ file: path.relative(paths.root, paths.transcript), sha256: await sha256File(path.join(dir, TRANSCRIPT_FILE)) });
    expect(manifest.r1csSha256).to.equal(await sha256File(circuit.r1cs));
    for (const [file, sha256] of Object.entries(manifest.files)) expect(await sha256File(path.join(paths.root, file)), file).to.equal(sha256);
    expect(await sha256File(paths.zkey)).to.equal(transcript.steps[4]!.output.sha256);
    // Three parties and a beacon, but a development phase 1: still not for production, and finish says so last.
    expect(manifest.ptau.development).to.equal(true);
    const assessment = await assessProvingKey(paths);
    expect(productionShortfalls(assessment)).to.have.length(1).and.to.match(/phase 1 is a development file/);
    expect(outputs.at(-1)!.trim().split("\n").at(-1)).to.match(/done: a DEVELOPMENT key, NOT for production chains .*its phase 1 is a development file/);
  });

  it("makes a key that proves, with the verification key and verifiers derived from it", async function () {
    const paths = artifactPaths(path.join(work, "out"));
    const { proof, publicSignals } = await snarkjs.groth16.fullProve({ factors: ["2", "3", "4", "5", "6", "7"], secret: "11" }, paths.wasm, paths.zkey);
    expect(publicSignals[0]).to.equal(String(11 * 2 * 3 * 4 * 5 * 6 * 7));
    expect(await snarkjs.groth16.verify(JSON.parse(await readFile(paths.vkey, "utf8")), publicSignals, proof)).to.equal(true);
    expect(await readFile(paths.verifier, "utf8")).to.contain("library WithdrawalVerifier");
    expect(await readFile(paths.batchVerifier, "utf8")).to.contain("contract WithdrawalBatchVerifier");
  });

  it("verifies from the ceremony's folder, and from the published transcript and final zkey alone", async function () {
    const fromDir = await ceremony(["verify", "--dir", dir, "--ptau", ptau, "--r1cs", circuit.r1cs]);
    expect(fromDir.code, fromDir.output).to.equal(0);
    expect(fromDir.output).to.contain("the ceremony verifies");
    const paths = artifactPaths(path.join(work, "out"));
    const published = await ceremony(["verify", "--transcript", paths.transcript, "--zkey", paths.zkey, "--ptau", ptau, "--r1cs", circuit.r1cs]);
    expect(published.code, published.output).to.equal(0);
  });

  it("writes nothing secret: the folder holds the transcript and the zkeys, and no file or output holds typed entropy", async function () {
    expect((await readdir(dir)).sort()).to.deep.equal([TRANSCRIPT_FILE, ...transcript.steps.map((step) => step.output.file)].sort());
    for (const output of outputs) expect(output).to.not.contain(aliceEntropy);
    const files = await readdir(work, { recursive: true, withFileTypes: true });
    for (const file of files.filter((entry) => entry.isFile())) {
      expect((await readFile(path.join(file.parentPath, file.name))).includes(aliceEntropy), file.name).to.equal(false);
    }
  });

  describe("refuses a tampered ceremony", function () {
    let copy: string;
    const finalZkey = () => path.join(copy, transcript.steps[4]!.output.file);
    const options = () => ({ transcriptFile: path.join(copy, TRANSCRIPT_FILE), ptau, r1cs: circuit.r1cs, say: quiet });

    beforeEach(async function () {
      copy = await mkdtemp(path.join(work, "tampered-"));
      await cp(dir, copy, { recursive: true });
    });

    it("whose final zkey was changed, without spending snarkjs' long verify once a hash check failed", async function () {
      const bytes = await readFile(finalZkey());
      bytes[Math.floor(bytes.length / 2)]! ^= 0x01;
      await writeFile(finalZkey(), bytes);
      const said: string[] = [];
      const { ok, checks } = await verifyCeremony({ ...options(), say: (line) => said.push(line) });
      expect(ok).to.equal(false);
      expect(checks.find((check) => check.check.startsWith("zkey of step 4 (public random beacon)"))?.ok).to.equal(false);
      expect(checks.map((check) => check.check)).to.not.include("snarkjs zkey verify");
      expect(said.at(-1)).to.match(/^skipping snarkjs zkey verify \(the long step\): the ceremony fails already \(zkey of step 4/);
    });

    it("whose final zkey was swapped for an earlier, valid zkey of the chain", async function () {
      await cp(path.join(copy, transcript.steps[3]!.output.file), finalZkey());
      const failed = await failedChecks(options());
      expect(failed.some((check) => check.startsWith("zkey of step 4"))).to.equal(true);
      expect(failed.some((check) => check.startsWith("contributions in the final zkey") && check.includes("carries 3 contributions"))).to.equal(true);
      // A valid key, just not this ceremony's: the hashes and the contributions it carries tell.
    });

    it("whose transcript renames a contributor", async function () {
      const edited = structuredClone(transcript);
      (edited.steps[2] as { name: string }).name = "Mallory";
      await writeTranscript(options().transcriptFile, edited);
      const failed = await failedChecks(options());
      expect(failed).to.have.length(1);
      expect(failed[0]).to.contain('named "Bob" in the zkey, "Mallory" in the transcript');
    });

    it("whose transcript changes a contribution hash or a zkey's hash", async function () {
      const edited = structuredClone(transcript);
      (edited.steps[1] as { contributionHash: string }).contributionHash = "0".repeat(128);
      edited.steps[2]!.output.sha256 = "0".repeat(64);
      await writeTranscript(options().transcriptFile, edited);
      const failed = await failedChecks(options());
      expect(failed.some((check) => check.startsWith("contributions in the final zkey") && check.includes('contribution 1 ("Alice")'))).to.equal(true);
      expect(failed.some((check) => check.startsWith("steps chain") && check.includes("step 3 (Carol)"))).to.equal(true);
      expect(failed.some((check) => check.startsWith("zkey of step 2 (Bob)"))).to.equal(true);

      const { code, output } = await ceremony(["verify", "--dir", copy, "--ptau", ptau, "--r1cs", circuit.r1cs]);
      expect(code, output).to.equal(1);
      expect(output).to.contain("the ceremony does NOT verify");
    });

    it("and contribute refuses a changed latest zkey, and anything after the beacon", async function () {
      await assert.rejects(contribute({ dir: copy, name: "Dave", say: quiet }), /the beacon closed this ceremony/);
      const edited = { ...transcript, steps: transcript.steps.slice(0, 4) };
      await writeTranscript(options().transcriptFile, edited);
      const latest = path.join(copy, edited.steps[3]!.output.file);
      const bytes = await readFile(latest);
      bytes[bytes.length - 1]! ^= 0x01;
      await writeFile(latest, bytes);
      await assert.rejects(contribute({ dir: copy, name: "Dave", say: quiet }), /is not the zkey the transcript ends with/);
    });
  });

  it("refuses a phase-1 file that is not a known public one unless marked development", async function () {
    // A header of power 8 (a power the table knows) with the prepared section: anything but Hermez' file.
    const header = Buffer.alloc(4 + 32 + 8);
    header.writeUInt32LE(32, 0);
    header.writeUInt32LE(8, 36);
    header.writeUInt32LE(8, 40);
    const section = (type: number, body: Buffer) => Buffer.concat([Buffer.from(new Uint32Array([type]).buffer), Buffer.from(new BigUint64Array([BigInt(body.length)]).buffer), body]);
    const fake = path.join(work, "fake8.ptau");
    await writeFile(fake, Buffer.concat([Buffer.from("ptau"), Buffer.from(new Uint32Array([1, 2]).buffer), section(1, header), section(12, Buffer.alloc(0))]));
    await assert.rejects(checkPhase1(fake, false), /is not the published hash of powersOfTau28_hez_final_08\.ptau.*pass --development/);
    expect((await checkPhase1(fake, true)).development).to.equal(true);
    await assert.rejects(checkPhase1(ptau, false), /no public phase-1 file of power 5 is known.*pass --development: its keys are development keys, refused on production chains whoever contributes/);
  });

  it("start without --ptau says so before compiling anything", async function () {
    const { code, output } = await ceremony(["start", "--dir", path.join(work, "never")]);
    expect(code, output).to.equal(2);
    expect(output).to.contain("--ptau is required").and.to.not.contain("compiling");
  });

  it("finish writes a key of two contributions and no beacon only with --development, and says so last", async function () {
    const short = await mkdtemp(path.join(work, "two-parties-"));
    await cp(dir, short, { recursive: true });
    await writeTranscript(path.join(short, TRANSCRIPT_FILE), { ...transcript, steps: transcript.steps.slice(0, 3) });
    const root = path.join(work, "two-parties-out");
    const finish = (extra: string[]) => ceremony(["finish", "--dir", short, "--ptau", ptau, "--r1cs", circuit.r1cs, "--wasm", circuit.wasm, "--root", root, ...extra]);

    const refused = await finish([]);
    expect(refused.code, refused.output).to.equal(1);
    expect(refused.output).to.contain("2 phase-2 contributions, 3 needed").and.to.contain("no random beacon").and.to.contain("nothing was written").and.to.contain("pass --development");
    expect(await readdir(root).catch(() => [])).to.deep.equal([]);

    const written = await finish(["--development"]);
    expect(written.code, written.output).to.equal(0);
    expect(written.output.trim().split("\n").at(-1)).to.match(/done: a DEVELOPMENT key, NOT for production chains .*2 phase-2 contributions, 3 needed; no random beacon/);
    expect(written.output).to.not.contain("and deploy a new pool");
  });

  it("commits its key into a scratch checkout, where the key guard's tests pass and the deploy guard judges it from its files", async function () {
    // The checkout's own files (not node_modules, not build outputs), then the ceremony's key over the committed one.
    const scratch = path.join(work, "scratch");
    const listed = await runCommand("git", ["ls-files", "--cached", "--others", "--exclude-standard"], { cwd: REPO_ROOT });
    for (const file of listed.output.split("\n").filter((file) => file !== "" && file !== "node_modules")) {
      await cp(path.join(REPO_ROOT, file), path.join(scratch, file), { recursive: true, verbatimSymlinks: true }).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "ENOENT") throw error; // deleted in the working tree, not yet in git
      });
    }
    await symlink(path.join(REPO_ROOT, "node_modules"), path.join(scratch, "node_modules"));
    const out = artifactPaths(path.join(work, "out"));
    const committed = artifactPaths(scratch);
    for (const key of ["wasm", "zkey", "vkey", "verifier", "batchVerifier", "manifest", "transcript"] as const) await cp(out[key], committed[key]);

    const assessment = await assessProvingKey(committed);
    expect(assessment.inconsistencies).to.deep.equal([]);
    expect(assessment.description).to.match(/^3 phase-2 contributions \(Alice, Bob, Carol\), beacon 8f3a2c1d0e9b7a6f/);
    const verdict = judgeProvingKey(assessment, 8453, { allowUntrustedKey: false });
    expect(verdict.deploy).to.equal(false);
    expect(verdict.lines.filter((line) => line.startsWith("  - "))).to.deep.equal([`  - ${assessment.lacks[0]}`]);

    const mocha = path.join(scratch, "node_modules", ".bin", "mocha");
    const { code, output } = await runCommand(mocha, ["-n", "import=tsx", "--exit", "--timeout", "600000", "test/operators/key-guard.test.ts"], { cwd: scratch });
    expect(code, output).to.equal(0);
    expect(output).to.match(/\d+ passing/).and.to.not.match(/failing|pending/);
  });
});
