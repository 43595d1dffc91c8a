import { expect } from "chai";
import { network } from "hardhat";
import { createLeanIMT, nullifierHashOf } from "../../sdk/index.js";
import { deployedFacilitator } from "./helpers/fixtures.js";
import { depositNote, ragequitNote, secretsFor, statePathFromChain } from "./helpers/notes.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture } = networkHelpers;

const EXCLUDED_VALUE = 3_000_000n;

/** Two deposits; the ASP approves the other depositor's label and excludes the depositor's. */
async function excludedDeposit() {
  const facilitator = await loadFixture(deployedFacilitator);
  const { depositor, otherDepositor } = facilitator.accounts;
  const excluded = await depositNote(facilitator, depositor, EXCLUDED_VALUE, secretsFor(1n));
  const approved = await depositNote(facilitator, otherDepositor, 1_000_000n, secretsFor(2n));
  const aspTree = createLeanIMT([approved.label]);
  await facilitator.entrypoint.updateRoot(aspTree.root, aspTree.depth, "bafy-asp-excluding-depositor");
  return { ...facilitator, excluded };
}

describe("ragequit", function () {
  it("returns an excluded deposit to its original depositor and spends its nullifier", async function () {
    const { privacyPool, usdc, excluded, accounts } = await loadFixture(excludedDeposit);
    const { value, label, nullifier, commitment } = excluded;

    const ragequit = ragequitNote(privacyPool, accounts.depositor, excluded);
    await expect(ragequit).to.changeTokenBalances(ethers, usdc, [privacyPool, accounts.depositor], [-value, value]);
    await expect(ragequit)
      .to.emit(privacyPool, "Ragequit")
      .withArgs(accounts.depositor.address, commitment, label, value, nullifierHashOf(nullifier));
    expect(await privacyPool.isNullifierSpent(nullifierHashOf(nullifier))).to.equal(true);
  });

  it("rejects a ragequit by anyone but the original depositor, even with the note's secrets", async function () {
    const { privacyPool, excluded, accounts } = await loadFixture(excludedDeposit);

    for (const caller of [accounts.otherDepositor, accounts.admin, accounts.stranger]) {
      await expect(ragequitNote(privacyPool, caller, excluded)).to.be.revertedWithCustomError(privacyPool, "OnlyOriginalDepositor");
    }
  });

  it("rejects a ragequit of a label nobody deposited", async function () {
    const { privacyPool, excluded, accounts } = await loadFixture(excludedDeposit);
    const { value, label, nullifier, secret, commitment } = excluded;
    const path = await statePathFromChain(privacyPool, commitment);

    await expect(
      privacyPool.connect(accounts.depositor).ragequit(value, label + 1n, nullifier, secret, path),
    ).to.be.revertedWithCustomError(privacyPool, "OnlyOriginalDepositor");
  });

  it("rejects a ragequit whose value or secrets match no note in the state tree", async function () {
    const { privacyPool, excluded, accounts } = await loadFixture(excludedDeposit);
    const { value, label, nullifier, secret, commitment } = excluded;
    const pool = privacyPool.connect(accounts.depositor);
    const path = await statePathFromChain(privacyPool, commitment);

    await expect(pool.ragequit(value + 1n, label, nullifier, secret, path)).to.be.revertedWithCustomError(
      privacyPool,
      "CommitmentNotInStateTree",
    );
    await expect(pool.ragequit(value, label, nullifier, secret + 1n, path)).to.be.revertedWithCustomError(
      privacyPool,
      "CommitmentNotInStateTree",
    );
  });

  it("rejects a path with a wrong sibling, of the wrong length, or to a tree size the pool never had", async function () {
    const { privacyPool, excluded, accounts } = await loadFixture(excludedDeposit);
    const { value, label, nullifier, secret, commitment } = excluded;
    const pool = privacyPool.connect(accounts.depositor);
    // The deposit is leaf 0 of a 2-leaf tree: its one sibling is the other deposit.
    const path = await statePathFromChain(privacyPool, commitment);
    const ragequitWith = (overrides: Partial<typeof path>) => pool.ragequit(value, label, nullifier, secret, { ...path, ...overrides });

    await expect(ragequitWith({ siblings: [path.siblings[0]! + 1n] })).to.be.revertedWithCustomError(privacyPool, "CommitmentNotInStateTree");
    await expect(ragequitWith({ siblings: [] })).to.be.revertedWithCustomError(privacyPool, "StateTreeDepthMismatch");
    await expect(ragequitWith({ stateTreeSize: 3n, siblings: [...path.siblings, 0n] })).to.be.revertedWithCustomError(
      privacyPool,
      "CommitmentNotInStateTree",
    );
  });

  it("accepts a path to an earlier root the pool still accepts", async function () {
    const { privacyPool, excluded, accounts } = await loadFixture(excludedDeposit);
    // With one leaf, the tree's root was the deposit itself: the empty path of the 1-leaf tree.
    const path = { stateTreeSize: 1n, leafIndex: 0n, siblings: [] };
    const { value, label, nullifier, secret } = excluded;
    await expect(privacyPool.connect(accounts.depositor).ragequit(value, label, nullifier, secret, path)).to.emit(privacyPool, "Ragequit");
  });

  it("rejects a second ragequit of the same note", async function () {
    const { privacyPool, excluded, accounts } = await loadFixture(excludedDeposit);
    const pool = privacyPool;
    await ragequitNote(pool, accounts.depositor, excluded);

    await expect(ragequitNote(pool, accounts.depositor, excluded)).to.be.revertedWithCustomError(
      privacyPool,
      "NullifierAlreadySpent",
    );
  });
});
