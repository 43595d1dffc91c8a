import { expect } from "chai";
import { hexlify, randomBytes } from "ethers";
import { network } from "hardhat";
import { createLeanIMT, encodeSellerPayment, namePublicSignals, nullifierHashOf, withdrawalContext, type SellerPayment } from "../../sdk/index.js";
import { deployedFacilitator } from "./helpers/fixtures.js";
import { depositNote, secretsFor } from "./helpers/notes.js";
import { proveRelayedWithdrawal, proveSellerPayment, type RelayedWithdrawal } from "./helpers/withdrawals.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture, time } = networkHelpers;

const NOTE_VALUE = 5_000_000n;
const PRICE = 10_000n;
const FEE = 1_500n;
/** Far enough ahead that every test but the expiry's relays within the window. */
const WINDOW_SECONDS = 3_600n;

/** Two notes of two depositors, both labels approved; a payee that already holds USDC, as a live seller does. */
async function poolWithNotes() {
  const facilitator = await loadFixture(deployedFacilitator);
  const { depositor, otherDepositor } = facilitator.accounts;
  const note = await depositNote(facilitator, depositor, NOTE_VALUE, secretsFor(1n));
  const otherNote = await depositNote(facilitator, otherDepositor, NOTE_VALUE, secretsFor(2n));
  const aspTree = createLeanIMT([note.label, otherNote.label]);
  await facilitator.entrypoint.updateRoot(aspTree.root, aspTree.depth, "bafy-seller-payments");
  await facilitator.usdc.mint(facilitator.accounts.recipient, 1n);
  const forwarder = await ethers.deployContract("Forwarder");
  return { ...facilitator, note, otherNote, forwarder, stateLeaves: [note.commitment, otherNote.commitment], aspTree };
}

type Pool = Awaited<ReturnType<typeof poolWithNotes>>;

const termsFor = (pool: Pool, validBefore: bigint, overrides: Partial<SellerPayment> = {}): SellerPayment => ({
  payTo: pool.accounts.recipient.address,
  amount: PRICE,
  feeRecipient: pool.accounts.feeRecipient.address,
  fee: FEE,
  requestReference: hexlify(randomBytes(32)),
  validBefore,
  ...overrides,
});

async function proveFor(pool: Pool, terms: SellerPayment, extra: { withdrawnValue?: bigint; relayFeeBPS?: bigint } = {}) {
  return proveSellerPayment({
    note: pool.note,
    stateTree: createLeanIMT(pool.stateLeaves),
    aspTree: pool.aspTree,
    entrypoint: await pool.entrypoint.getAddress(),
    scope: pool.scope,
    sellerPayment: terms,
    ...extra,
  });
}

const relayOf = (pool: Pool, payment: RelayedWithdrawal) =>
  pool.entrypoint.interface.encodeFunctionData("relay", [payment.withdrawal, payment.proof, pool.scope, payment.stateTreeSize]);

describe("seller payments straight from the pool", function () {
  let terms: SellerPayment;
  let paid: RelayedWithdrawal;

  before(async function () {
    const pool = await loadFixture(poolWithNotes);
    terms = termsFor(pool, BigInt(await time.latest()) + WINDOW_SECONDS);
    paid = await proveFor(pool, terms);
  });

  it("pays payTo exactly the price and accrues exactly the fee, whoever relays, and records the proof's context", async function () {
    const pool = await loadFixture(poolWithNotes);
    const { entrypoint, privacyPool, usdc, scope, accounts, note } = pool;
    const relay = entrypoint.connect(accounts.stranger).relay(paid.withdrawal, paid.proof, scope, paid.stateTreeSize);
    await expect(relay).to.changeTokenBalances(
      ethers,
      usdc,
      [privacyPool, accounts.recipient, accounts.feeRecipient, accounts.stranger, entrypoint],
      [-PRICE, PRICE, 0n, 0n, 0n],
    );
    await expect(relay).to.emit(privacyPool, "Withdrawn").withArgs(PRICE + FEE, nullifierHashOf(note.nullifier), paid.changeNote.commitment);
    expect(await privacyPool.accruedFeesOf(accounts.feeRecipient)).to.equal(FEE);
    const context = namePublicSignals(paid.proof.pubSignals).context;
    expect(context).to.equal(withdrawalContext({ processooor: await entrypoint.getAddress(), data: encodeSellerPayment(terms) }, scope));
    expect(BigInt(await privacyPool.spendRecordOf(nullifierHashOf(note.nullifier)))).to.equal(context);
    expect(paid.changeNote.value).to.equal(NOTE_VALUE - PRICE - FEE);
  });

  it("pays the same seller the same terms when a stranger sends a copy through a contract of its own, and only once", async function () {
    const pool = await loadFixture(poolWithNotes);
    const { entrypoint, privacyPool, usdc, scope, accounts, forwarder, note } = pool;
    await expect(forwarder.connect(accounts.stranger).forward([entrypoint], [relayOf(pool, paid)])).to.changeTokenBalances(
      ethers,
      usdc,
      [privacyPool, accounts.recipient, accounts.stranger, forwarder],
      [-PRICE, PRICE, 0n, 0n],
    );
    // Recognized by its effect, whoever sent it: the record is the context of these terms.
    expect(BigInt(await privacyPool.spendRecordOf(nullifierHashOf(note.nullifier)))).to.equal(namePublicSignals(paid.proof.pubSignals).context);
    await expect(entrypoint.relay(paid.withdrawal, paid.proof, scope, paid.stateTreeSize)).to.be.revertedWithCustomError(privacyPool, "NullifierAlreadySpent");
  });

  it("refuses the payment from its validBefore on", async function () {
    const pool = await loadFixture(poolWithNotes);
    await time.increaseTo(terms.validBefore - 1n); // the relay's block is at validBefore
    await expect(pool.entrypoint.relay(paid.withdrawal, paid.proof, pool.scope, paid.stateTreeSize)).to.be.revertedWithCustomError(
      pool.entrypoint,
      "SellerPaymentExpired",
    );
  });

  it("refuses terms the proof does not bind: another payee, price, fee split, fee recipient, reference or window", async function () {
    const pool = await loadFixture(poolWithNotes);
    const { entrypoint, scope } = pool;
    const altered: Partial<SellerPayment>[] = [
      { payTo: pool.accounts.stranger.address },
      { amount: PRICE + FEE, fee: 0n },
      { amount: PRICE - 1n, fee: FEE + 1n },
      { feeRecipient: pool.accounts.stranger.address },
      { requestReference: hexlify(randomBytes(32)) },
      { validBefore: terms.validBefore + 1n },
    ];
    for (const change of altered) {
      const withdrawal = { ...paid.withdrawal, data: encodeSellerPayment({ ...terms, ...change }) };
      await expect(entrypoint.relay(withdrawal, paid.proof, scope, paid.stateTreeSize), JSON.stringify(change, (_, v) => (typeof v === "bigint" ? String(v) : v)))
        .to.be.revertedWithCustomError(entrypoint, "ContextMismatch");
    }
  });

  it("refuses a withdrawn value that is not the price plus the fee", async function () {
    const pool = await loadFixture(poolWithNotes);
    const overpaid = await proveFor(pool, terms, { withdrawnValue: PRICE + FEE + 1n });
    await expect(pool.entrypoint.relay(overpaid.withdrawal, overpaid.proof, pool.scope, overpaid.stateTreeSize)).to.be.revertedWithCustomError(
      pool.entrypoint,
      "SellerPaymentValueMismatch",
    );
  });

  it("refuses a proof that takes a relay fee rate: a seller payment's fee is an amount", async function () {
    const pool = await loadFixture(poolWithNotes);
    const withRate = await proveFor(pool, terms, { relayFeeBPS: 500n });
    await expect(pool.entrypoint.relay(withRate.withdrawal, withRate.proof, pool.scope, withRate.stateTreeSize)).to.be.revertedWithCustomError(
      pool.entrypoint,
      "RelayFeeMismatch",
    );
  });

  it("refuses data of neither a RelayData's, a SellerPayment's nor a PoolAuthorization's length", async function () {
    const pool = await loadFixture(poolWithNotes);
    for (const data of [paid.withdrawal.data + "00".repeat(64), paid.withdrawal.data.slice(0, -128)]) {
      await expect(pool.entrypoint.relay({ ...paid.withdrawal, data }, paid.proof, pool.scope, paid.stateTreeSize)).to.be.revertedWithCustomError(
        pool.entrypoint,
        "InvalidWithdrawalData",
      );
    }
  });

  it("is never refundable: no refund's record matches a seller payment's spend", async function () {
    const pool = await loadFixture(poolWithNotes);
    const { entrypoint, privacyPool, usdc, scope, note } = pool;
    await entrypoint.relay(paid.withdrawal, paid.proof, scope, paid.stateTreeSize);
    await time.increaseTo(terms.validBefore + 1n);
    // As the return of an authorization of the same seller, price and window: the pool recorded the context, not that.
    const transfer = { payTo: terms.payTo, value: PRICE, validAfter: 0n, validBefore: terms.validBefore };
    await expect(entrypoint.refundAuthorization(usdc, nullifierHashOf(note.nullifier), transfer, namePublicSignals(paid.proof.pubSignals).refundAnchor)).to.be.revertedWithCustomError(
      privacyPool,
      "RefundNotRecorded",
    );
  });

  it("is paid in a batch beside a plain relay, and skipped when its note was spent first", async function () {
    const pool = await loadFixture(poolWithNotes);
    const { entrypoint, privacyPool, usdc, scope, accounts, note, otherNote, stateLeaves } = pool;
    const plain = await proveRelayedWithdrawal({
      note: otherNote,
      withdrawnValue: 1_000_000n,
      stateTree: createLeanIMT(stateLeaves),
      aspTree: pool.aspTree,
      entrypoint: await entrypoint.getAddress(),
      scope,
      relayData: { recipient: accounts.stranger.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n },
    });
    const batch = () =>
      entrypoint.relayBatch([paid.withdrawal, plain.withdrawal], [paid.proof, plain.proof], scope, [paid.stateTreeSize, plain.stateTreeSize]);
    const snapshot = await networkHelpers.takeSnapshot();
    await expect(batch()).to.changeTokenBalances(ethers, usdc, [accounts.recipient, accounts.stranger], [PRICE, 1_000_000n]);
    expect(BigInt(await privacyPool.spendRecordOf(nullifierHashOf(note.nullifier)))).to.equal(namePublicSignals(paid.proof.pubSignals).context);

    await snapshot.restore();
    await entrypoint.relay(paid.withdrawal, paid.proof, scope, paid.stateTreeSize);
    await expect(batch()).to.emit(privacyPool, "WithdrawalSkipped").withArgs(nullifierHashOf(note.nullifier));
  });
});
