import { expect } from "chai";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { sha256File } from "../../sdk/circuit/artifacts.js";
import { artifactPaths, type ArtifactPaths } from "../../scripts/circuits/export-artifacts.js";
import { assessProvingKey, KNOWN_DEVELOPMENT_PHASE1 } from "../../scripts/circuits/key-trust.js";
import { keyPhase1Points, samePhase1Points } from "../../scripts/ceremony/phase1-points.js";
import { readManifest, writeManifest, type ArtifactManifest } from "../../scripts/circuits/manifest.js";
import { generateVerifier } from "../../scripts/circuits/verifier.js";
import { generateBatchVerifier } from "../../scripts/circuits/batch-verifier.js";
import { isProductionChain, judgeProvingKey } from "../../scripts/deploy/key-guard.js";
import { createDevelopmentPhase1, fileHashes } from "../../scripts/ceremony/phase1.js";
import { forgeLaunchKey } from "../helpers/forged-launch-key.js";
import { runTinyCeremony, type TinyCeremony } from "../helpers/tiny-ceremony.js";

const BASE = 8453;
const strict = { allowUntrustedKey: false };

describe("deploy: the proving-key guard", function () {
  let work: string;
  let ceremony: TinyCeremony;

  before(async function () {
    work = await mkdtemp(path.join(os.tmpdir(), "key-guard-"));
    ceremony = await runTinyCeremony(work);
  });

  after(async function () {
    await rm(work, { recursive: true, force: true });
  });

  /** A copy of the ceremony's finished checkout that a test may tamper with; `edit` changes its manifest. */
  async function tamperable(edit: (manifest: ArtifactManifest) => void = () => {}): Promise<ArtifactPaths> {
    const paths = artifactPaths(await mkdtemp(path.join(work, "copy-")));
    await cp(ceremony.paths.root, paths.root, { recursive: true });
    const manifest = await readManifest(paths.manifest);
    edit(manifest);
    await writeManifest(manifest, paths.manifest);
    return paths;
  }

  /** Pins `file` in the manifest as it is now: an edit that leaves the hashes consistent. */
  async function repin(paths: ArtifactPaths, file: string) {
    const manifest = await readManifest(paths.manifest);
    manifest.files[path.relative(paths.root, file)] = await sha256File(file);
    await writeManifest(manifest, paths.manifest);
  }

  const asPublic = (manifest: ArtifactManifest) => void (manifest.ptau.development = false);

  it("counts Base as the production chain, and neither Base Sepolia nor the local chain", function () {
    expect([BASE, 84532, 31337].map(isProductionChain)).to.deep.equal([true, false, false]);
  });

  it("deploys to Base a key whose files prove a public phase 1, three contributions, a beacon and the verifiers", async function () {
    // The ceremony's phase 1 stands in for a public one: accepted as public, recorded as public.
    const paths = await tamperable(asPublic);
    const verdict = judgeProvingKey(await assessProvingKey(paths, ceremony.asPublic), BASE, strict);
    expect(verdict.lines.join("\n")).to.contain("proving key: 3 phase-2 contributions (Alice, Bob, Carol), beacon 8f3a2c1d0e9b7a6f").and.to.not.contain("WARNING");
    expect(verdict.deploy).to.equal(true);
  });

  it("refuses on Base a development phase 1 whatever the manifest's flag says (finding 1)", async function () {
    const paths = await tamperable((manifest) => {
      manifest.ptau.development = false;
      manifest.ptau.source = "Hermez powersOfTau28_hez_final_05.ptau";
    });
    const verdict = judgeProvingKey(await assessProvingKey(paths), BASE, strict);
    expect(verdict.deploy).to.equal(false);
    const text = verdict.lines.join("\n");
    expect(text).to.contain("its phase 1 is a development file: no public file of power 5 has its hash");
    expect(text).to.contain("the manifest calls its phase 1 public, but its hash makes it a development file");
  });

  it("refuses on Base a key whose transcript names a public phase 1, unless the file itself is named and checked against the key", async function () {
    const paths = await tamperable(asPublic);
    const unchecked = await assessProvingKey(paths, { accepted: ceremony.acceptedAsPublic });
    expect(unchecked.inconsistencies).to.deep.equal([]);
    expect(unchecked.lacks).to.deep.equal([
      "its phase 1 is the public pot5_dev.ptau by its transcript's word only: name that file (PHASE1_PTAU) so that the key's alpha and beta are checked against it",
    ]);
    expect(judgeProvingKey(unchecked, BASE, strict).deploy).to.equal(false);
    expect((await assessProvingKey(paths, ceremony.asPublic)).lacks).to.deep.equal([]);
  });

  it("refuses on Base a key named against a public file it was not made from, or against a file that is not the published one", async function () {
    const paths = await tamperable(asPublic);
    // Another file with its published hash: the key's alpha and beta are not its.
    const other = path.join(work, "pot5_other.ptau");
    await createDevelopmentPhase1(5, other, () => {});
    const accepted = { 5: { file: "pot5_other.ptau", blake2b: (await fileHashes(other)).blake2b } };
    const another = await assessProvingKey(paths, { publicPhase1File: other, accepted });
    expect(another.lacks).to.deep.equal(["its phase 1 is another file than the public pot5_other.ptau: the key's alpha and beta are not that file's"]);
    // The key's own file, whose hash nobody published.
    const unpublished = await assessProvingKey(paths, { publicPhase1File: ceremony.ptau });
    expect(unpublished.lacks).to.deep.equal(["its phase 1 is a development file: pot5_dev.ptau is no public phase 1 (no published file of power 5 has its BLAKE2b-512)"]);
  });

  it("refuses on Base the committed development key dressed as a launch key (two contributions, a beacon, a transcript claiming Hermez' file), by the key's own alpha and beta", async function () {
    this.timeout(180_000);
    const committedPoints = keyPhase1Points(JSON.parse(await readFile(artifactPaths().vkey, "utf8")) as Parameters<typeof keyPhase1Points>[0]);
    const knownDevelopment = KNOWN_DEVELOPMENT_PHASE1.find((file) => samePhase1Points(file.points, committedPoints));
    if (knownDevelopment === undefined && (await assessProvingKey()).lacks.length === 0) this.skip(); // the committed key is a launch key: nothing to dress up
    const { paths: forged, contributors } = await forgeLaunchKey(await mkdtemp(path.join(work, "forged-")));
    // Without the phase-1 file, and with a file that is not the published one named as PHASE1_PTAU.
    for (const options of [{}, { publicPhase1File: ceremony.ptau }]) {
      const assessment = await assessProvingKey(forged, options);
      expect(assessment.inconsistencies, "every hash, pin and verifier of the forgery agrees").to.deep.equal([]);
      if (contributors.length > 0) expect(assessment.description).to.contain(`${contributors.join(", ")}), beacon 8f3a2c1d0e9b7a6f`);
      expect(assessment.lacks).to.have.length(1);
      expect(assessment.lacks[0]).to.match(/^its phase 1 is /);
      if (knownDevelopment !== undefined) expect(assessment.lacks[0]).to.equal(`its phase 1 is a development file (${knownDevelopment.description}), as the key's own alpha and beta show`);
      const verdict = judgeProvingKey(assessment, BASE, strict);
      expect(verdict.deploy).to.equal(false);
      expect(verdict.lines.join("\n")).to.contain("refusing to deploy to chain 8453");
    }
  });

  it("refuses on Base a key whose zkey carries fewer contributions than the manifest and transcript list", async function () {
    // Bob's zkey (two contributions, no beacon) with every derived file made from it and pinned: only the zkey's
    // own contribution section and the transcript's hashes tell.
    const paths = await tamperable(asPublic);
    await cp(path.join(ceremony.dir, ceremony.transcript.steps[2]!.output.file), paths.zkey);
    await writeFile(paths.verifier, await generateVerifier(paths.zkey));
    for (const file of [paths.zkey, paths.verifier]) await repin(paths, file);
    const assessment = await assessProvingKey(paths, ceremony.asPublic);
    const verdict = judgeProvingKey(assessment, BASE, strict);
    expect(verdict.deploy).to.equal(false);
    expect(assessment.description).to.match(/^2 phase-2 contributions \(Alice, Bob\), no beacon/);
    expect(assessment.lacks).to.deep.equal(["2 phase-2 contributions, 3 needed", "no random beacon after the last contribution"]);
    expect(assessment.inconsistencies.join("\n")).to.contain("the transcript ends with another zkey").and.to.contain("the manifest lists 4 contributions (Alice, Bob, Carol, public random beacon), the zkey carries 2 (Alice, Bob)");
  });

  it("refuses on Base a batch verifier its key did not make, pinned or not (finding 6)", async function () {
    const paths = await tamperable(asPublic);
    const batch = await readFile(paths.batchVerifier, "utf8");
    const constant = /\d{70,}/.exec(batch)![0];
    await writeFile(paths.batchVerifier, batch.replace(constant, (BigInt(constant) + 1n).toString()));
    const unpinned = judgeProvingKey(await assessProvingKey(paths, ceremony.asPublic), BASE, strict);
    expect(unpinned.deploy).to.equal(false);
    expect(unpinned.lines.join("\n")).to.contain("contracts/verifiers/WithdrawalBatchVerifier.sol is not the file sdk/artifacts/manifest.json pins");

    await repin(paths, paths.batchVerifier);
    const pinned = judgeProvingKey(await assessProvingKey(paths, ceremony.asPublic), BASE, strict);
    expect(pinned.deploy).to.equal(false);
    expect(pinned.lines.join("\n")).to.contain("contracts/verifiers/WithdrawalBatchVerifier.sol is not the batch verifier of sdk/artifacts/withdraw.vkey.json");
    expect(await generateBatchVerifier(paths.vkey)).to.equal(batch);
  });

  it("refuses on Base a manifest without its transcript, or whose transcript was edited", async function () {
    const without = await tamperable((manifest) => {
      asPublic(manifest);
      manifest.phase2.transcript = null;
    });
    expect((await assessProvingKey(without, ceremony.asPublic)).lacks).to.deep.equal(["no ceremony transcript is committed beside it, so nobody can check who contributed"]);

    const edited = await tamperable(asPublic);
    const transcript = JSON.parse(await readFile(edited.transcript, "utf8")) as { steps: { name?: string }[] };
    transcript.steps[2]!.name = "Mallory";
    await writeFile(edited.transcript, JSON.stringify(transcript));
    const verdict = judgeProvingKey(await assessProvingKey(edited, ceremony.asPublic), BASE, strict);
    expect(verdict.deploy).to.equal(false);
    expect(verdict.lines.join("\n")).to.contain("sdk/artifacts/withdraw.ceremony.json is not the transcript the manifest pins");
  });

  it("judges the committed key by its own files: refused on Base naming each thing it lacks, unless it lacks nothing", async function () {
    const assessment = await assessProvingKey();
    expect(assessment.inconsistencies, "the committed key's files disagree").to.deep.equal([]);
    const verdict = judgeProvingKey(assessment, BASE, strict);
    expect(verdict.deploy).to.equal(assessment.lacks.length === 0);
    if (verdict.deploy) return;
    const text = verdict.lines.join("\n");
    expect(text).to.contain("refusing to deploy to chain 8453").and.to.contain(`proving key: ${assessment.description}`).and.to.contain("ALLOW_UNTRUSTED_KEY=1");
    for (const lack of assessment.lacks) expect(text).to.contain(`  - ${lack}`);
  });

  it("deploys an untrusted key to Base with ALLOW_UNTRUSTED_KEY, warning loudly", async function () {
    const verdict = judgeProvingKey(await assessProvingKey(ceremony.paths), BASE, { allowUntrustedKey: true });
    expect(verdict.deploy).to.equal(true);
    expect(verdict.lines.join("\n")).to.contain("WARNING: ALLOW_UNTRUSTED_KEY=1").and.to.contain("its phase 1 is a development file").and.to.contain("never put real funds in it");
  });

  it("deploys any key elsewhere, saying what it is, and warning where its files disagree", async function () {
    const assessment = await assessProvingKey(ceremony.paths);
    expect(judgeProvingKey(assessment, 84532, strict)).to.deep.equal({ deploy: true, lines: [`proving key: ${assessment.description}`] });
    const paths = await tamperable();
    await writeFile(paths.batchVerifier, "// not a verifier\n");
    const verdict = judgeProvingKey(await assessProvingKey(paths), 31337, strict);
    expect(verdict.deploy).to.equal(true);
    expect(verdict.lines).to.include("warning: contracts/verifiers/WithdrawalBatchVerifier.sol is not the file sdk/artifacts/manifest.json pins");
  });
});
