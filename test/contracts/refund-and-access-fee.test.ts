import { expect } from "chai";
import { hexlify, randomBytes, type Signer } from "ethers";
import { network } from "hardhat";
import {
  createLeanIMT,
  createNote,
  deriveChangeSecrets,
  deriveRefundSecrets,
  encodeAccessFeeData,
  namePublicSignals,
  nullifierHashOf,
  type Note,
  type PaymentTerms,
} from "../../sdk/index.js";
import { buildAuthorization, signAuthorization } from "./helpers/authorizations.js";
import { deployedFacilitator, type DeployedFacilitator } from "./helpers/fixtures.js";
import { approvedRefundableNote, fundDepositor } from "./helpers/notes.js";
import { proveAccessFee, proveRelayedWithdrawal, withPackedParts, type RelayedWithdrawal } from "./helpers/withdrawals.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture } = networkHelpers;

const NOTE_VALUE = 2_000_000n;
/** An x402 price and the take on it: the payer is paid GROSS - GROSS * FEE_BPS / 10_000 = PAYOUT. */
const GROSS = 52_631n;
const FEE_BPS = 500n;
const PAYOUT = GROSS - (GROSS * FEE_BPS) / 10_000n;
const PAYMENT_WINDOW_SECONDS = 300;
const ACCESS_FEE = 1_000n;

// The single-use payer the relay funds; its key signs the payment and the refund, as the relayer's payer key does.
const payer = ethers.Wallet.createRandom(ethers.provider);
let payment: PaymentTerms;
let relayed: RelayedWithdrawal;
let origin: Note;

/** A deposit whose label the ASP approved, and its relay of GROSS to the single-use payer, proven once. */
async function approvedDeposit() {
  const facilitator = await loadFixture(deployedFacilitator);
  const approved = await approvedRefundableNote(facilitator, NOTE_VALUE);
  return { ...facilitator, ...approved };
}

/** approvedDeposit after the x402 relay to the payer was mined: the pool recorded its payment. */
async function paymentRelayed() {
  const facilitator = await loadFixture(approvedDeposit);
  await facilitator.entrypoint.relay(relayed.withdrawal, relayed.proof, facilitator.scope, relayed.stateTreeSize);
  return facilitator;
}

/** paymentRelayed once the payment's window has closed, unused. */
async function paymentExpired() {
  const facilitator = await loadFixture(paymentRelayed);
  await networkHelpers.time.increaseTo(payment.validBefore);
  return facilitator;
}

/** The payment as the pool recorded it for the relay, with `overrides`. */
function recordOf(overrides: Partial<{ payer: string; amount: bigint; nonce: string; validBefore: bigint; refundAnchor: bigint }> = {}) {
  return {
    payer: payer.address,
    amount: PAYOUT,
    nonce: payment.nonce,
    validBefore: payment.validBefore,
    refundAnchor: namePublicSignals(relayed.proof.pubSignals).refundAnchor,
    ...overrides,
  };
}

/** The payer's ReceiveWithAuthorization of `value` to the entrypoint, as Entrypoint.depositRefund takes it. */
async function refundAuthorization({ entrypoint, usdc }: DeployedFacilitator, from: Signer, value: bigint) {
  const now = await networkHelpers.time.latest();
  const authorization = buildAuthorization(now, { from: await from.getAddress(), to: await entrypoint.getAddress(), value, nonce: hexlify(randomBytes(32)) });
  const signature = await signAuthorization(from, usdc, "ReceiveWithAuthorization", authorization);
  const { validAfter, validBefore, nonce } = authorization;
  return { validAfter, validBefore, nonce, signature };
}

/** The seller uses the payer's payment: a TransferWithAuthorization of PAYOUT with the relay's nonce. */
async function sellerSettles({ usdc, accounts }: DeployedFacilitator) {
  const authorization = { from: payer.address, to: accounts.recipient.address, value: PAYOUT, validAfter: 0n, validBefore: payment.validBefore, nonce: payment.nonce };
  const signature = await signAuthorization(payer, usdc, "TransferWithAuthorization", authorization);
  const { from, to, value, validAfter, validBefore, nonce } = authorization;
  await usdc
    .connect(accounts.stranger)
    ["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](from, to, value, validAfter, validBefore, nonce, signature);
}

describe("refunds of unused payments", function () {
  before(async function () {
    const { note, aspTree, entrypoint, scope, accounts } = await loadFixture(approvedDeposit);
    origin = note;
    payment = { nonce: hexlify(randomBytes(32)), validBefore: BigInt((await networkHelpers.time.latest()) + PAYMENT_WINDOW_SECONDS) };
    relayed = await proveRelayedWithdrawal({
      note,
      withdrawnValue: GROSS,
      stateTree: createLeanIMT([note.commitment]),
      aspTree,
      relayData: { recipient: payer.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: FEE_BPS, payment },
      entrypoint: await entrypoint.getAddress(),
      scope,
    });
  });

  it("returns exactly the payout as the note the proof committed to, under the origin's label", async function () {
    const facilitator = await loadFixture(paymentExpired);
    const { entrypoint, privacyPool, usdc } = facilitator;
    const refundNote = createNote(PAYOUT, origin.label, deriveRefundSecrets(origin), "refund");
    const originNullifierHash = nullifierHashOf(origin.nullifier);

    const refund = entrypoint.depositRefund(usdc, originNullifierHash, recordOf(), await refundAuthorization(facilitator, payer, PAYOUT));
    await expect(refund).to.changeTokenBalances(ethers, usdc, [payer, privacyPool], [-PAYOUT, PAYOUT]);
    await expect(refund).to.emit(entrypoint, "RefundDeposited").withArgs(payer.address, refundNote.commitment, originNullifierHash, PAYOUT);
    await expect(refund).to.emit(privacyPool, "LeafInserted");
    await expect(refund).not.to.emit(privacyPool, "Deposited");
    expect(await privacyPool.currentTreeSize()).to.equal(3n);
  });

  it("leaves a stranger's transfer to the payer where it is and still refunds the exact payout", async function () {
    const facilitator = await loadFixture(paymentExpired);
    const { entrypoint, usdc, accounts } = facilitator;
    await usdc.mint(accounts.stranger, PAYOUT + 1n);
    await usdc.connect(accounts.stranger).transfer(payer, PAYOUT + 1n);

    const refund = entrypoint.depositRefund(usdc, nullifierHashOf(origin.nullifier), recordOf(), await refundAuthorization(facilitator, payer, PAYOUT));
    await expect(refund).to.changeTokenBalance(ethers, usdc, payer, -PAYOUT);
    expect(await usdc.balanceOf(payer)).to.equal(PAYOUT + 1n);
  });

  it("refuses a payment the seller used, whatever sits at the payer since", async function () {
    const facilitator = await loadFixture(paymentRelayed);
    const { entrypoint, usdc, accounts } = facilitator;
    await sellerSettles(facilitator);
    // Someone (a sanctioned address, say) sends the payer the same amount again after the payment was used.
    await usdc.mint(accounts.stranger, PAYOUT);
    await usdc.connect(accounts.stranger).transfer(payer, PAYOUT);
    await networkHelpers.time.increaseTo(payment.validBefore);

    const authorization = await refundAuthorization(facilitator, payer, PAYOUT);
    await expect(entrypoint.depositRefund(usdc, nullifierHashOf(origin.nullifier), recordOf(), authorization)).to.be.revertedWithCustomError(
      entrypoint,
      "PaymentAlreadyUsed",
    );
  });

  it("refuses while the payment's window is open", async function () {
    const facilitator = await loadFixture(paymentRelayed);
    const { entrypoint, usdc } = facilitator;
    const authorization = await refundAuthorization(facilitator, payer, PAYOUT);
    await expect(entrypoint.depositRefund(usdc, nullifierHashOf(origin.nullifier), recordOf(), authorization)).to.be.revertedWithCustomError(
      entrypoint,
      "PaymentNotExpired",
    );
  });

  it("refuses any other amount, payer, nonce, window or refund note than the relay recorded", async function () {
    const facilitator = await loadFixture(paymentExpired);
    const { entrypoint, privacyPool, usdc, accounts } = facilitator;
    const originNullifierHash = nullifierHashOf(origin.nullifier);
    const others = [
      recordOf({ amount: PAYOUT + 1n }),
      recordOf({ amount: PAYOUT - 1n }),
      recordOf({ payer: accounts.stranger.address }),
      recordOf({ nonce: hexlify(randomBytes(32)) }),
      recordOf({ validBefore: payment.validBefore - 1n }),
      recordOf({ refundAnchor: 12_345n }),
    ];
    for (const record of others) {
      const authorization = await refundAuthorization(facilitator, payer, record.amount);
      await expect(entrypoint.depositRefund(usdc, originNullifierHash, record, authorization)).to.be.revertedWithCustomError(
        privacyPool,
        "RefundNotRecorded",
      );
    }
    const authorization = await refundAuthorization(facilitator, payer, PAYOUT);
    await expect(entrypoint.depositRefund(usdc, 12_345n, recordOf(), authorization)).to.be.revertedWithCustomError(privacyPool, "RefundNotRecorded");
  });

  it("refunds a payment once", async function () {
    const facilitator = await loadFixture(paymentExpired);
    const { entrypoint, privacyPool, usdc } = facilitator;
    const originNullifierHash = nullifierHashOf(origin.nullifier);
    await entrypoint.depositRefund(usdc, originNullifierHash, recordOf(), await refundAuthorization(facilitator, payer, PAYOUT));
    const again = await refundAuthorization(facilitator, payer, PAYOUT);
    await expect(entrypoint.depositRefund(usdc, originNullifierHash, recordOf(), again)).to.be.revertedWithCustomError(
      privacyPool,
      "OriginAlreadyRefunded",
    );
  });

  it("lets only the refunder role return a payment", async function () {
    const facilitator = await loadFixture(paymentExpired);
    const { entrypoint, usdc, accounts } = facilitator;
    const authorization = await refundAuthorization(facilitator, payer, PAYOUT);
    await expect(entrypoint.connect(accounts.stranger).depositRefund(usdc, nullifierHashOf(origin.nullifier), recordOf(), authorization))
      .to.be.revertedWithCustomError(entrypoint, "AccessControlUnauthorizedAccount")
      .withArgs(accounts.stranger.address, await entrypoint.REFUNDER_ROLE());
  });

  it("refuses a zero refund and an asset without a pool", async function () {
    const facilitator = await loadFixture(paymentExpired);
    const { entrypoint, usdc, accounts } = facilitator;
    const authorization = await refundAuthorization(facilitator, payer, PAYOUT);
    const originNullifierHash = nullifierHashOf(origin.nullifier);
    await expect(entrypoint.depositRefund(usdc, originNullifierHash, recordOf({ amount: 0n }), authorization)).to.be.revertedWithCustomError(
      entrypoint,
      "ZeroRefund",
    );
    const other = await ethers.deployContract("TestUSDC", [accounts.admin]);
    await expect(entrypoint.depositRefund(other, originNullifierHash, recordOf(), authorization)).to.be.revertedWithCustomError(
      entrypoint,
      "AssetNotRegistered",
    );
  });

  it("moves nothing without the payer's authorization of exactly the payout", async function () {
    const facilitator = await loadFixture(paymentExpired);
    const { entrypoint, usdc, accounts } = facilitator;
    const originNullifierHash = nullifierHashOf(origin.nullifier);
    for (const authorization of [await refundAuthorization(facilitator, accounts.stranger, PAYOUT), await refundAuthorization(facilitator, payer, PAYOUT - 1n)]) {
      await expect(entrypoint.depositRefund(usdc, originNullifierHash, recordOf(), authorization)).to.be.revertedWithCustomError(usdc, "InvalidSignature");
    }
    expect(await usdc.balanceOf(payer)).to.equal(PAYOUT);
  });

  it("excludes a refund with its depositor: once the label leaves the set, the refund note cannot be relayed", async function () {
    const facilitator = await loadFixture(paymentExpired);
    const { entrypoint, usdc, aspTree, scope, accounts } = facilitator;
    await entrypoint.depositRefund(usdc, nullifierHashOf(origin.nullifier), recordOf(), await refundAuthorization(facilitator, payer, PAYOUT));
    const refundNote = createNote(PAYOUT, origin.label, deriveRefundSecrets(origin), "refund");
    const stateTree = createLeanIMT([origin.commitment, relayed.changeNote.commitment, refundNote.commitment]);
    const spendRefund = await proveRelayedWithdrawal({
      note: refundNote,
      withdrawnValue: PAYOUT,
      stateTree,
      aspTree,
      relayData: { recipient: accounts.recipient.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n },
      entrypoint: await entrypoint.getAddress(),
      scope,
    });
    // The depositor is screened out: the curator's next root is the empty set, revoking every earlier root.
    await entrypoint.revokeAndUpdateRoot(0n, 0n, "bafy-excluded", []);
    await expect(
      entrypoint.relay(spendRefund.withdrawal, spendRefund.proof, scope, spendRefund.stateTreeSize),
    ).to.be.revertedWithCustomError(entrypoint, "AspRootRevoked");
  });
});

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

/** approvedDeposit with the access-fee treasury set: its note can pay an access fee out of itself. */
async function noteCanPayAccessFee() {
  const facilitator = await loadFixture(approvedDeposit);
  await facilitator.entrypoint.setAccessFeeTreasury(facilitator.accounts.feeRecipient);
  return facilitator;
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
