import { expect } from "chai";
import { network } from "hardhat";
import { createLeanIMT, nullifierHashOf } from "../../sdk/index.js";
import { deployedFacilitator } from "./helpers/fixtures.js";
import { depositNote, secretsFor } from "./helpers/notes.js";

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
    const { value, label, nullifier, secret, commitment } = excluded;

    const ragequit = privacyPool.connect(accounts.depositor).ragequit(value, label, nullifier, secret);
    await expect(ragequit).to.changeTokenBalances(ethers, usdc, [privacyPool, accounts.depositor], [-value, value]);
    await expect(ragequit)
      .to.emit(privacyPool, "Ragequit")
      .withArgs(accounts.depositor.address, commitment, label, value, nullifierHashOf(nullifier));
    expect(await privacyPool.isNullifierSpent(nullifierHashOf(nullifier))).to.equal(true);
  });

  it("rejects a ragequit by anyone but the original depositor, even with the note's secrets", async function () {
    const { privacyPool, excluded, accounts } = await loadFixture(excludedDeposit);
    const { value, label, nullifier, secret } = excluded;

    for (const caller of [accounts.otherDepositor, accounts.admin, accounts.stranger]) {
      await expect(
        privacyPool.connect(caller).ragequit(value, label, nullifier, secret),
      ).to.be.revertedWithCustomError(privacyPool, "OnlyOriginalDepositor");
    }
  });

  it("rejects a ragequit of a label nobody deposited", async function () {
    const { privacyPool, excluded, accounts } = await loadFixture(excludedDeposit);
    const { value, label, nullifier, secret } = excluded;

    await expect(
      privacyPool.connect(accounts.depositor).ragequit(value, label + 1n, nullifier, secret),
    ).to.be.revertedWithCustomError(privacyPool, "OnlyOriginalDepositor");
  });

  it("rejects a ragequit whose value or secrets match no note in the state tree", async function () {
    const { privacyPool, excluded, accounts } = await loadFixture(excludedDeposit);
    const { value, label, nullifier, secret } = excluded;
    const pool = privacyPool.connect(accounts.depositor);

    await expect(pool.ragequit(value + 1n, label, nullifier, secret)).to.be.revertedWithCustomError(
      privacyPool,
      "CommitmentNotInStateTree",
    );
    await expect(pool.ragequit(value, label, nullifier, secret + 1n)).to.be.revertedWithCustomError(
      privacyPool,
      "CommitmentNotInStateTree",
    );
  });

  it("rejects a second ragequit of the same note", async function () {
    const { privacyPool, excluded, accounts } = await loadFixture(excludedDeposit);
    const { value, label, nullifier, secret } = excluded;
    const pool = privacyPool.connect(accounts.depositor);
    await pool.ragequit(value, label, nullifier, secret);

    await expect(pool.ragequit(value, label, nullifier, secret)).to.be.revertedWithCustomError(
      privacyPool,
      "NullifierAlreadySpent",
    );
  });
});
