import { expect } from "chai";
import { readManifest, type ArtifactManifest } from "../../scripts/circuits/manifest.js";
import { isProductionChain, judgeProvingKey } from "../../scripts/deploy/key-guard.js";

const BASE = 8453;
const hash = (digit: string) => digit.repeat(128);

/** A manifest of a finished production ceremony: public phase 1, three parties, a beacon; `overrides` change parts. */
async function ceremonyManifest(overrides: { development?: boolean; parties?: number; beacon?: boolean } = {}): Promise<ArtifactManifest> {
  const committed = await readManifest();
  const { development = false, parties = 3, beacon = true } = overrides;
  return {
    ...committed,
    ptau: { ...committed.ptau, development, source: development ? "development phase 1" : "Hermez powersOfTau28_hez_final_15.ptau" },
    phase2: {
      contributions: Array.from({ length: parties }, (_, i) => ({ name: `party ${i + 1}`, hash: hash(String(i + 1)) })),
      beacon: beacon ? { name: "public random beacon", hash: hash("b"), value: "ab".repeat(32), iterationsExp: 10, source: "Base block 1 hash" } : null,
      transcript: { file: "sdk/artifacts/withdraw.ceremony.json", sha256: "c".repeat(64) },
    },
  };
}

const pinned = { allowUntrustedKey: false, verifierPinned: true };

describe("deploy: the proving-key guard", function () {
  it("counts Base as the production chain, and neither Base Sepolia nor the local chain", function () {
    expect([BASE, 84532, 31337].map(isProductionChain)).to.deep.equal([true, false, false]);
  });

  it("deploys a ceremony's key to Base: public phase 1, three contributions and a beacon", async function () {
    const verdict = judgeProvingKey(await ceremonyManifest(), BASE, pinned);
    expect(verdict.deploy).to.equal(true);
    expect(verdict.lines.join("\n")).to.contain("3 phase-2 contributions (party 1, party 2, party 3), beacon abababab").and.to.not.contain("WARNING");
  });

  it("refuses on Base the committed development key, and names each thing it lacks", async function () {
    const verdict = judgeProvingKey(await readManifest(), BASE, pinned);
    expect(verdict.deploy).to.equal(false);
    const text = verdict.lines.join("\n");
    expect(text).to.contain("refusing to deploy to chain 8453").and.to.contain("development key, one party (dev phase-2 contribution)");
    expect(text).to.contain("its phase 1 is a development file").and.to.contain("1 phase-2 contribution, 3 needed").and.to.contain("no random beacon");
    expect(text).to.contain("ALLOW_UNTRUSTED_KEY=1");
  });

  it("refuses on Base a key missing any one of the three", async function () {
    for (const overrides of [{ development: true }, { parties: 2 }, { beacon: false }]) {
      expect(judgeProvingKey(await ceremonyManifest(overrides), BASE, pinned).deploy, JSON.stringify(overrides)).to.equal(false);
    }
  });

  it("refuses on Base a manifest that does not pin the verifier being deployed", async function () {
    const verdict = judgeProvingKey(await ceremonyManifest(), BASE, { ...pinned, verifierPinned: false });
    expect(verdict.deploy).to.equal(false);
    expect(verdict.lines.join("\n")).to.contain("WithdrawalVerifier.sol is not the verifier sdk/artifacts/manifest.json pins");
  });

  it("deploys an untrusted key to Base with ALLOW_UNTRUSTED_KEY, warning loudly", async function () {
    const verdict = judgeProvingKey(await readManifest(), BASE, { ...pinned, allowUntrustedKey: true });
    expect(verdict.deploy).to.equal(true);
    expect(verdict.lines.join("\n")).to.contain("WARNING: ALLOW_UNTRUSTED_KEY=1").and.to.contain("never put real funds in it");
  });

  it("deploys any key elsewhere, saying what it is", async function () {
    expect(judgeProvingKey(await readManifest(), 84532, pinned)).to.deep.equal({
      deploy: true,
      lines: ["proving key: development key, one party (dev phase-2 contribution)"],
    });
    const ceremony = judgeProvingKey(await ceremonyManifest({ beacon: false }), 31337, pinned);
    expect(ceremony.deploy).to.equal(true);
    expect(ceremony.lines[0]).to.contain("3 phase-2 contributions (party 1, party 2, party 3), no beacon");
  });
});
