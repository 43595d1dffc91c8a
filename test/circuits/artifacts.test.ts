import { expect } from "chai";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import * as snarkjs from "snarkjs";
import { CIRCUIT_CONFIG, loadVerificationKey, WITHDRAW_ARTIFACTS, WITHDRAW_PUBLIC_SIGNALS } from "../../sdk/index.js";
import { sha256File } from "../../sdk/circuit/artifacts.js";
import { compileCircuit, REPO_ROOT } from "../../scripts/circuits/compile.js";
import { readManifest, type ArtifactManifest } from "../../scripts/circuits/manifest.js";
import { BATCH_VERIFIER_PATH, generateBatchVerifier } from "../../scripts/circuits/batch-verifier.js";
import { generateVerifier, VERIFIER_PATH } from "../../scripts/circuits/verifier.js";
import { readZkeyContributions } from "../../scripts/ceremony/zkey-contributions.js";

// The committed keys were set up for one compiled circuit. A circuit change without `npm run circuits:setup`
// would leave provers and the on-chain verifier disagreeing with the source; these tests catch it.
describe("committed circuit artifacts", function () {
  let manifest: ArtifactManifest;
  let buildDir: string;

  before(async function () {
    manifest = await readManifest();
    buildDir = await mkdtemp(path.join(os.tmpdir(), "withdraw-circuit-"));
  });

  after(async function () {
    await rm(buildDir, { recursive: true, force: true });
  });

  it("match the hashes in the manifest", async function () {
    for (const [file, sha256] of Object.entries(manifest.files)) {
      expect(await sha256File(path.join(REPO_ROOT, file)), file).to.equal(sha256);
    }
    expect(Object.keys(manifest.files)).to.have.members([
      path.relative(REPO_ROOT, WITHDRAW_ARTIFACTS.wasm),
      path.relative(REPO_ROOT, WITHDRAW_ARTIFACTS.zkey),
      path.relative(REPO_ROOT, WITHDRAW_ARTIFACTS.vkey),
      path.relative(REPO_ROOT, VERIFIER_PATH),
      path.relative(REPO_ROOT, BATCH_VERIFIER_PATH),
    ]);
  });

  it("were set up for the circuit the source compiles to today", async function () {
    const compiled = await compileCircuit(buildDir);
    expect(await sha256File(compiled.r1cs), "r1cs changed: run `npm run circuits:setup`").to.equal(manifest.r1csSha256);
    expect(await sha256File(compiled.wasm), "witness calculator changed").to.equal(await sha256File(WITHDRAW_ARTIFACTS.wasm));

    const info = await snarkjs.r1cs.info(compiled.r1cs);
    expect(info.nConstraints).to.equal(manifest.constraints);
    expect(info.nConstraints).to.be.below(2 ** CIRCUIT_CONFIG.ptauPower);
    expect(info.nPubInputs + info.nOutputs).to.equal(WITHDRAW_PUBLIC_SIGNALS.length);
  });

  it("hold a verification key and Solidity verifiers (single and batch) derived from the committed zkey", async function () {
    const fromZkey = await snarkjs.zKey.exportVerificationKey(WITHDRAW_ARTIFACTS.zkey);
    expect(JSON.parse(JSON.stringify(fromZkey))).to.deep.equal(await loadVerificationKey());
    expect(await generateVerifier(WITHDRAW_ARTIFACTS.zkey)).to.equal(await readFile(VERIFIER_PATH, "utf8"));
    expect(await generateBatchVerifier(WITHDRAW_ARTIFACTS.vkey), "run `npm run circuits:batch-verifier`").to.equal(
      await readFile(BATCH_VERIFIER_PATH, "utf8"),
    );
  });

  it("record in the manifest the contributions and beacon the committed zkey carries", async function () {
    const carried = await readZkeyContributions(WITHDRAW_ARTIFACTS.zkey);
    const beacon = carried.at(-1)?.beacon;
    const contributions = beacon === undefined ? carried : carried.slice(0, -1);
    expect(manifest.phase2.contributions).to.deep.equal(contributions.map(({ name, hash }) => ({ name, hash })));
    expect(manifest.phase2.beacon === null ? undefined : { value: manifest.phase2.beacon.value, iterationsExp: manifest.phase2.beacon.iterationsExp }).to.deep.equal(beacon);
    if (manifest.phase2.transcript !== null) {
      expect(await sha256File(path.join(REPO_ROOT, manifest.phase2.transcript.file))).to.equal(manifest.phase2.transcript.sha256);
    }
  });
});
