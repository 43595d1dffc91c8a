import { expect } from "chai";
import { Wallet } from "ethers";
import { network } from "hardhat";
import { createLeanIMT, nullifierHashOf, type Note } from "../../sdk/index.js";
import { deployedFacilitator } from "./helpers/fixtures.js";
import { depositNote, secretsFor } from "./helpers/notes.js";
import { proveRelayedWithdrawal, withPackedParts, type RelayedWithdrawal } from "./helpers/withdrawals.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture } = networkHelpers;

const NOTE_VALUE = 3_000_000n;
const FEE_BPS = 500n;
const WITHDRAWN = [1_000_000n, 400_000n, 3_000_000n, 123_457n];
/** Fee recipients by withdrawal: two runs, so two fee transfers. */
const FEE_RECIPIENTS = [0, 0, 1, 1];

/** Four notes of the depositor in the pool, every label approved by the published ASP root. */
async function fourNotes() {
  const facilitator = await loadFixture(deployedFacilitator);
  const notes: Note[] = [];
  for (let i = 1n; i <= 4n; i++) notes.push(await depositNote(facilitator, facilitator.accounts.depositor, NOTE_VALUE, secretsFor(i)));
  const aspTree = createLeanIMT(notes.map((note) => note.label));
  await facilitator.entrypoint.updateRoot(aspTree.root, aspTree.depth, "bafy-batch");
  return { ...facilitator, notes, aspTree };
}

const recipients = WITHDRAWN.map(() => Wallet.createRandom().address);
let feeRecipients: string[];
let batch: RelayedWithdrawal[];

const argsOf = (withdrawals: RelayedWithdrawal[]) =>
  [withdrawals.map((w) => w.withdrawal), withdrawals.map((w) => w.proof), withdrawals.map((w) => w.stateTreeSize)] as const;

describe("batch relays (Entrypoint.relayBatch)", function () {
  before(async function () {
    const { notes, aspTree, entrypoint, scope, accounts } = await loadFixture(fourNotes);
    feeRecipients = [accounts.feeRecipient.address, accounts.stranger.address];
    const stateTree = createLeanIMT(notes.map((note) => note.commitment));
    batch = [];
    for (const [i, note] of notes.entries()) {
      batch.push(
        await proveRelayedWithdrawal({
          note,
          withdrawnValue: WITHDRAWN[i]!,
          stateTree,
          aspTree,
          relayData: { recipient: recipients[i]!, feeRecipient: feeRecipients[FEE_RECIPIENTS[i]!]!, relayFeeBPS: FEE_BPS },
          entrypoint: await entrypoint.getAddress(),
          scope,
        }),
      );
    }
  });

  it("pays every withdrawal, accrues each run of fee recipients' fees, spends every note and inserts every change note", async function () {
    const { entrypoint, privacyPool, usdc, scope, notes } = await loadFixture(fourNotes);
    const [withdrawals, proofs, sizes] = argsOf(batch);
    const receipt = await (await entrypoint.relayBatch(withdrawals, proofs, scope, sizes)).wait();

    const fees = WITHDRAWN.map((value) => (value * FEE_BPS) / 10_000n);
    for (const [i, recipient] of recipients.entries()) expect(await usdc.balanceOf(recipient)).to.equal(WITHDRAWN[i]! - fees[i]!);
    const feesTo = (run: number) => fees.filter((_, i) => FEE_RECIPIENTS[i] === run).reduce((a, b) => a + b, 0n);
    const transfers = receipt!.logs.map((log) => usdc.interface.parseLog(log)).filter((event) => event?.name === "Transfer");
    expect(transfers.map((event) => [event!.args.to, event!.args.value])).to.deep.equal(
      recipients.map((recipient, i) => [recipient, WITHDRAWN[i]! - fees[i]!]),
    );
    for (const run of [0, 1]) expect(await privacyPool.accruedFeesOf(feeRecipients[run]!)).to.equal(feesTo(run));

    for (const note of notes) expect(await privacyPool.isNullifierSpent(nullifierHashOf(note.nullifier))).to.equal(true);
    const stateTree = createLeanIMT([...notes.map((note) => note.commitment), ...batch.map((w) => w.changeNote.commitment)]);
    expect(await privacyPool.currentRoot()).to.equal(stateTree.root);
    const inserted = receipt!.logs.map((log) => privacyPool.interface.parseLog(log)).filter((event) => event?.name === "LeafInserted");
    expect(inserted.map((event) => [event!.args.leafIndex, event!.args.leaf, event!.args.root])).to.deep.equal(
      batch.map((w, i) => [BigInt(4 + i), w.changeNote.commitment, stateTree.root]),
    );
    const withdrawn = receipt!.logs.map((log) => privacyPool.interface.parseLog(log)).filter((event) => event?.name === "Withdrawn");
    expect(withdrawn.map((event) => [event!.args.spentNullifierHash, event!.args.withdrawnValue])).to.deep.equal(
      notes.map((note, i) => [nullifierHashOf(note.nullifier), WITHDRAWN[i]]),
    );
  });

  it("skips a note spent just before the batch is mined, names it, and pays the others", async function () {
    const { entrypoint, privacyPool, usdc, scope, notes } = await loadFixture(fourNotes);
    // Someone spends the second note first (here its own relay), as a copy of its calldata or a ragequit would.
    await entrypoint.relay(batch[1]!.withdrawal, batch[1]!.proof, scope, batch[1]!.stateTreeSize);
    const paidBefore = await usdc.balanceOf(recipients[1]!);
    const [withdrawals, proofs, sizes] = argsOf(batch);
    const relayBatch = entrypoint.relayBatch(withdrawals, proofs, scope, sizes);

    await expect(relayBatch).to.emit(privacyPool, "WithdrawalSkipped").withArgs(nullifierHashOf(notes[1]!.nullifier));
    const receipt = await (await relayBatch).wait();
    const fees = WITHDRAWN.map((value) => (value * FEE_BPS) / 10_000n);
    for (const i of [0, 2, 3]) expect(await usdc.balanceOf(recipients[i]!)).to.equal(WITHDRAWN[i]! - fees[i]!);
    expect(await usdc.balanceOf(recipients[1]!)).to.equal(paidBefore);
    // The skipped withdrawal's fee accrued once, by its own relay.
    expect(await privacyPool.accruedFeesOf(feeRecipients[0]!)).to.equal(fees[0]! + fees[1]!);
    const withdrawn = receipt!.logs.map((log) => privacyPool.interface.parseLog(log)).filter((event) => event?.name === "Withdrawn");
    expect(withdrawn.map((event) => event!.args.spentNullifierHash)).to.deep.equal([0, 2, 3].map((i) => nullifierHashOf(notes[i]!.nullifier)));
    const stateTree = createLeanIMT([...notes.map((note) => note.commitment), ...[1, 0, 2, 3].map((i) => batch[i]!.changeNote.commitment)]);
    expect(await privacyPool.currentRoot()).to.equal(stateTree.root);
  });

  it("skips a note named twice in one batch, paying it once", async function () {
    const { entrypoint, privacyPool, scope, notes } = await loadFixture(fourNotes);
    const twice = argsOf([batch[0]!, batch[1]!, batch[0]!]);
    await expect(entrypoint.relayBatch(twice[0], twice[1], scope, twice[2]))
      .to.emit(privacyPool, "WithdrawalSkipped")
      .withArgs(nullifierHashOf(notes[0]!.nullifier));
  });

  it("leaves change notes a later relay can spend", async function () {
    const { entrypoint, privacyPool, scope, notes, aspTree, accounts } = await loadFixture(fourNotes);
    const [withdrawals, proofs, sizes] = argsOf(batch);
    await entrypoint.relayBatch(withdrawals, proofs, scope, sizes);
    const change = batch[0]!.changeNote;
    const spendChange = await proveRelayedWithdrawal({
      note: change,
      withdrawnValue: change.value,
      stateTree: createLeanIMT([...notes.map((note) => note.commitment), ...batch.map((w) => w.changeNote.commitment)]),
      aspTree,
      relayData: { recipient: accounts.recipient.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n },
      entrypoint: await entrypoint.getAddress(),
      scope,
    });
    await expect(entrypoint.relay(spendChange.withdrawal, spendChange.proof, scope, spendChange.stateTreeSize)).to.emit(privacyPool, "Withdrawn");
  });

  it("reverts whole when one proof does not verify, spending nothing", async function () {
    const { entrypoint, privacyPool, scope, notes } = await loadFixture(fourNotes);
    const raised = { ...batch[2]!, proof: withPackedParts(batch[2]!.proof, { withdrawnValue: NOTE_VALUE - 1n }) };
    const [withdrawals, proofs, sizes] = argsOf([batch[0]!, batch[1]!, raised, batch[3]!]);
    await expect(entrypoint.relayBatch(withdrawals, proofs, scope, sizes)).to.be.revertedWithCustomError(privacyPool, "InvalidProof");
    for (const note of notes) expect(await privacyPool.isNullifierSpent(nullifierHashOf(note.nullifier))).to.equal(false);
  });

  it("reverts whole, with its error, on a withdrawal a single relay would refuse for anything but a spent note", async function () {
    const { entrypoint, privacyPool, scope } = await loadFixture(fourNotes);
    const redirected = { ...batch[1]!, withdrawal: { ...batch[1]!.withdrawal, data: batch[0]!.withdrawal.data } };
    const context = argsOf([batch[0]!, redirected]);
    await expect(entrypoint.relayBatch(context[0], context[1], scope, context[2])).to.be.revertedWithCustomError(entrypoint, "ContextMismatch");

    const [withdrawals, proofs] = argsOf(batch);
    await expect(entrypoint.relayBatch(withdrawals, proofs, scope, [4n, 4n, 3n, 4n])).to.be.revertedWithCustomError(privacyPool, "UnknownStateRoot");
  });

  it("refuses an empty batch, one over MAX_BATCH_SIZE, and lists of different lengths", async function () {
    const { entrypoint, scope } = await loadFixture(fourNotes);
    const [withdrawals, proofs, sizes] = argsOf(batch);
    const max = Number(await entrypoint.MAX_BATCH_SIZE());
    const over = Array.from({ length: max + 1 }, (_, i) => batch[i % batch.length]!);
    for (const [w, p, s] of [
      [[], [], []],
      argsOf(over),
      [withdrawals, proofs.slice(1), sizes],
      [withdrawals, proofs, sizes.slice(1)],
    ] as const) {
      await expect(entrypoint.relayBatch([...w], [...p], scope, [...s])).to.be.revertedWithCustomError(entrypoint, "BatchSizeOutOfRange");
    }
  });
});
