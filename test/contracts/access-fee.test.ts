import { expect } from "chai";
import { network } from "hardhat";
import { createLeanIMT, deriveChangeSecrets, encodeAccessFeeData, nullifierHashOf, type Note } from "../../sdk/index.js";
import { deployedFacilitator } from "./helpers/fixtures.js";
import { approvedNote, fundDepositor } from "./helpers/notes.js";
import { proveAccessFee, proveRelayedWithdrawal, withPackedParts, type RelayedWithdrawal } from "./helpers/withdrawals.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture } = networkHelpers;

const NOTE_VALUE = 2_000_000n;
const ACCESS_FEE = 1_000n;

/** An access-fee treasury set by the admin and a payer who approved the entrypoint for the fee. */
async function accessFeeReady() {
  const facilitator = await loadFixture(deployedFacilitator);
  const { entrypoint, accounts } = facilitator;
  await entrypoint.setAccessFeeTreasury(accounts.feeRecipient);
  await fundDepositor(facilitator, accounts.depositor, ACCESS_FEE);
  return facilitator;
}

describe("access-fee payments", function () {
  it("pulls the fee to the treasury and binds payer, nullifier hash and amount in the event", async function () {
    const { entrypoint, usdc, accounts } = await loadFixture(accessFeeReady);
    const pay = entrypoint.connect(accounts.depositor).payAccessFee(usdc, 777n, ACCESS_FEE);
    await expect(pay).to.changeTokenBalances(ethers, usdc, [accounts.depositor, accounts.feeRecipient], [-ACCESS_FEE, ACCESS_FEE]);
    await expect(pay)
      .to.emit(entrypoint, "AccessFeePaid")
      .withArgs(accounts.depositor.address, 777n, await usdc.getAddress(), ACCESS_FEE, accounts.feeRecipient.address);
  });

  it("refuses a payment before the admin set a treasury", async function () {
    const { usdc, accounts } = await loadFixture(deployedFacilitator);
    const bare = await ethers.deployContract("Entrypoint", [accounts.admin, accounts.admin]);
    await expect(bare.connect(accounts.depositor).payAccessFee(usdc, 777n, ACCESS_FEE)).to.be.revertedWithCustomError(
      bare,
      "AccessFeeTreasuryNotSet",
    );
  });

  it("refuses a zero fee and an asset without a pool", async function () {
    const { entrypoint, usdc, accounts } = await loadFixture(accessFeeReady);
    await expect(entrypoint.connect(accounts.depositor).payAccessFee(usdc, 777n, 0n)).to.be.revertedWithCustomError(
      entrypoint,
      "ZeroAccessFee",
    );
    const other = await ethers.deployContract("TestUSDC", [accounts.admin]);
    await expect(entrypoint.connect(accounts.depositor).payAccessFee(other, 777n, ACCESS_FEE)).to.be.revertedWithCustomError(
      entrypoint,
      "AssetNotRegistered",
    );
  });

  it("lets only the admin set a non-zero treasury", async function () {
    const { entrypoint, accounts } = await loadFixture(deployedFacilitator);
    await expect(entrypoint.connect(accounts.stranger).setAccessFeeTreasury(accounts.stranger))
      .to.be.revertedWithCustomError(entrypoint, "AccessControlUnauthorizedAccount")
      .withArgs(accounts.stranger.address, await entrypoint.DEFAULT_ADMIN_ROLE());
    await expect(entrypoint.setAccessFeeTreasury(ethers.ZeroAddress)).to.be.revertedWithCustomError(entrypoint, "ZeroAddress");
    await expect(entrypoint.setAccessFeeTreasury(accounts.feeRecipient))
      .to.emit(entrypoint, "AccessFeeTreasuryUpdated")
      .withArgs(accounts.feeRecipient.address);
    expect(await entrypoint.accessFeeTreasury()).to.equal(accounts.feeRecipient.address);
  });
});

/** An approved note, and the access-fee treasury set: the note can pay an access fee out of itself. */
async function noteCanPayAccessFee() {
  const facilitator = await loadFixture(deployedFacilitator);
  const approved = await approvedNote(facilitator, NOTE_VALUE);
  await facilitator.entrypoint.setAccessFeeTreasury(facilitator.accounts.feeRecipient);
  return { ...facilitator, ...approved };
}

describe("access fees paid out of a note (relayAccessFee)", function () {
  /** The note's proof of ACCESS_FEE to the treasury, authorizing its own change note. */
  let fee: RelayedWithdrawal;
  /** A relay of the same note's ACCESS_FEE to the treasury as a plain recipient: the same value, another kind of data. */
  let asRelay: RelayedWithdrawal;
  let note: Note;
  let changeNullifierHash: bigint;

  before(async function () {
    const facilitator = await loadFixture(noteCanPayAccessFee);
    const { entrypoint, scope, aspTree, accounts } = facilitator;
    note = facilitator.note;
    changeNullifierHash = nullifierHashOf(deriveChangeSecrets(note).nullifier);
    const common = { note, withdrawnValue: ACCESS_FEE, stateTree: createLeanIMT([note.commitment]), aspTree, entrypoint: await entrypoint.getAddress(), scope };
    fee = await proveAccessFee({ ...common, accessFee: { treasury: accounts.feeRecipient.address, nullifierHash: changeNullifierHash } });
    asRelay = await proveRelayedWithdrawal({ ...common, relayData: { recipient: accounts.feeRecipient.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n } });
  });

  it("pays the whole withdrawn value to the treasury; the event names the pool as payer and the note the data names", async function () {
    const { entrypoint, privacyPool, usdc, scope, accounts } = await loadFixture(noteCanPayAccessFee);
    const pay = entrypoint.connect(accounts.stranger).relayAccessFee(fee.withdrawal, fee.proof, scope, fee.stateTreeSize);
    await expect(pay).to.changeTokenBalances(ethers, usdc, [privacyPool, accounts.feeRecipient, accounts.stranger], [-ACCESS_FEE, ACCESS_FEE, 0n]);
    await expect(pay)
      .to.emit(entrypoint, "AccessFeePaid")
      .withArgs(await privacyPool.getAddress(), changeNullifierHash, await usdc.getAddress(), ACCESS_FEE, accounts.feeRecipient.address);
    await expect(pay).to.emit(privacyPool, "Withdrawn").withArgs(ACCESS_FEE, nullifierHashOf(note.nullifier), fee.changeNote.commitment);
    expect(fee.changeNote.value).to.equal(note.value - ACCESS_FEE);
    // PLAIN: nothing of an access fee is ever refundable.
    expect(await privacyPool.spendRecordOf(nullifierHashOf(note.nullifier))).to.equal(`0x${"1".padStart(64, "0")}`);
  });

  it("refuses a relay's proof as an access fee, and an access fee's proof as a relay", async function () {
    const { entrypoint, scope } = await loadFixture(noteCanPayAccessFee);
    await expect(entrypoint.relayAccessFee(asRelay.withdrawal, asRelay.proof, scope, asRelay.stateTreeSize)).to.be.revertedWithCustomError(
      entrypoint,
      "InvalidWithdrawalData",
    );
    await expect(entrypoint.relay(fee.withdrawal, fee.proof, scope, fee.stateTreeSize)).to.be.revertedWithCustomError(entrypoint, "InvalidWithdrawalData");
    await expect(entrypoint.relayBatch([fee.withdrawal], [fee.proof], scope, [fee.stateTreeSize])).to.be.revertedWithCustomError(
      entrypoint,
      "InvalidWithdrawalData",
    );
  });

  it("refuses before the admin set a treasury, and once the treasury the proof names is no longer the entrypoint's", async function () {
    const { entrypoint, privacyPool, usdc, scope, aspTree, accounts } = await loadFixture(noteCanPayAccessFee);
    // The deployment sets a treasury: an entrypoint without one, registering the pool and publishing its ASP root.
    const bare = await ethers.deployContract("Entrypoint", [accounts.admin, accounts.admin]);
    await bare.registerPool(usdc, privacyPool, 0n, 0n);
    await bare.updateRoot(aspTree.root, aspTree.depth, "bafy-bare");
    const processedByBare = { ...fee.withdrawal, processooor: await bare.getAddress() };
    await expect(bare.relayAccessFee(processedByBare, fee.proof, scope, fee.stateTreeSize)).to.be.revertedWithCustomError(bare, "AccessFeeTreasuryNotSet");

    await entrypoint.setAccessFeeTreasury(accounts.stranger);
    await expect(entrypoint.relayAccessFee(fee.withdrawal, fee.proof, scope, fee.stateTreeSize)).to.be.revertedWithCustomError(
      entrypoint,
      "AccessFeeTreasuryMismatch",
    );
  });

  it("refuses a proof with a relay fee, one that withdraws nothing, and data naming another note than the proof binds", async function () {
    const { entrypoint, scope, accounts } = await loadFixture(noteCanPayAccessFee);
    const relay = (withdrawal: RelayedWithdrawal["withdrawal"], proof: RelayedWithdrawal["proof"]) =>
      entrypoint.relayAccessFee(withdrawal, proof, scope, fee.stateTreeSize);
    await expect(relay(fee.withdrawal, withPackedParts(fee.proof, { relayFeeBPS: 1n }))).to.be.revertedWithCustomError(entrypoint, "RelayFeeMismatch");
    await expect(relay(fee.withdrawal, withPackedParts(fee.proof, { withdrawnValue: 0n }))).to.be.revertedWithCustomError(entrypoint, "ZeroAccessFee");
    const another = { ...fee.withdrawal, data: encodeAccessFeeData({ treasury: accounts.feeRecipient.address, nullifierHash: 777n }) };
    await expect(relay(another, fee.proof)).to.be.revertedWithCustomError(entrypoint, "ContextMismatch");
  });

  it("checks what relay checks first: the processooor, the scope and the ASP root", async function () {
    const { entrypoint, scope, accounts } = await loadFixture(noteCanPayAccessFee);
    const elsewhere = { ...fee.withdrawal, processooor: accounts.stranger.address };
    await expect(entrypoint.relayAccessFee(elsewhere, fee.proof, scope, fee.stateTreeSize)).to.be.revertedWithCustomError(entrypoint, "InvalidProcessooor");
    await expect(entrypoint.relayAccessFee(fee.withdrawal, fee.proof, scope + 1n, fee.stateTreeSize)).to.be.revertedWithCustomError(entrypoint, "UnknownScope");
    await entrypoint.revokeAndUpdateRoot(0n, 0n, "bafy-excluded", []);
    await expect(entrypoint.relayAccessFee(fee.withdrawal, fee.proof, scope, fee.stateTreeSize)).to.be.revertedWithCustomError(entrypoint, "AspRootRevoked");
  });

  it("spends the note once", async function () {
    const { entrypoint, privacyPool, scope } = await loadFixture(noteCanPayAccessFee);
    await entrypoint.relayAccessFee(fee.withdrawal, fee.proof, scope, fee.stateTreeSize);
    await expect(entrypoint.relayAccessFee(fee.withdrawal, fee.proof, scope, fee.stateTreeSize)).to.be.revertedWithCustomError(
      privacyPool,
      "NullifierAlreadySpent",
    );
  });
});
