import { expect } from "chai";
import { network } from "hardhat";
import { createLeanIMT, encodeRelayData, nullifierHashOf, SNARK_SCALAR_FIELD, type RelayData } from "../../sdk/index.js";
import { deployedFacilitator, type DeployedFacilitator } from "./helpers/fixtures.js";
import { depositNote, fundDepositor, ragequitNote, secretsFor } from "./helpers/notes.js";
import { proveRelayedWithdrawal, withPackedParts, withSignal, type RelayedWithdrawal } from "./helpers/withdrawals.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture } = networkHelpers;

const NOTE_VALUE = 5_000_000n;
// Chosen so that both fees round down: 1_234_567 * 500 / 10_000 = 61_728.35 and 3_765_433 * 250 / 10_000 = 94_135.825.
const PARTIAL_WITHDRAWAL = 1_234_567n;
const PARTIAL_FEE_BPS = 500n;
const CHANGE_FEE_BPS = 250n;
const ASP_CID = "bafy-asp-tree-1";

const relayDataFor = (accounts: DeployedFacilitator["accounts"], relayFeeBPS: bigint): RelayData => ({
  recipient: accounts.recipient.address,
  feeRecipient: accounts.feeRecipient.address,
  relayFeeBPS,
});

/** A note of the depositor and one of another depositor in the pool; both labels approved by the ASP tree. */
async function depositedNotes() {
  const facilitator = await loadFixture(deployedFacilitator);
  const { depositor, otherDepositor } = facilitator.accounts;
  const note = await depositNote(facilitator, depositor, NOTE_VALUE, secretsFor(1n));
  const otherNote = await depositNote(facilitator, otherDepositor, 2_000_000n, secretsFor(2n));
  return {
    ...facilitator,
    note,
    stateLeaves: [note.commitment, otherNote.commitment],
    aspLabels: [note.label, otherNote.label],
  };
}

/** depositedNotes with the ASP root of its labels published by the postman. */
async function aspRootPublished() {
  const facilitator = await loadFixture(depositedNotes);
  const aspTree = createLeanIMT(facilitator.aspLabels);
  await facilitator.entrypoint.updateRoot(aspTree.root, aspTree.depth, ASP_CID);
  return facilitator;
}

// Real proofs are slow, so each is built once and each fixture below replays it.
let partial: RelayedWithdrawal;
let ofChange: RelayedWithdrawal;

/** aspRootPublished after the partial withdrawal was relayed: the change note is in the tree. */
async function partiallyWithdrawn() {
  const facilitator = await loadFixture(aspRootPublished);
  await facilitator.entrypoint.relay(partial.withdrawal, partial.proof, facilitator.scope, partial.stateTreeSize);
  return facilitator;
}

describe("relayed withdrawals", function () {
  before(async function () {
    const { note, stateLeaves, aspLabels, entrypoint, scope, accounts } = await loadFixture(aspRootPublished);
    const common = { aspTree: createLeanIMT(aspLabels), entrypoint: await entrypoint.getAddress(), scope };
    partial = await proveRelayedWithdrawal({
      ...common,
      note,
      withdrawnValue: PARTIAL_WITHDRAWAL,
      stateTree: createLeanIMT(stateLeaves),
      relayData: relayDataFor(accounts, PARTIAL_FEE_BPS),
    });
    ofChange = await proveRelayedWithdrawal({
      ...common,
      note: partial.changeNote,
      withdrawnValue: partial.changeNote.value,
      stateTree: createLeanIMT([...stateLeaves, partial.changeNote.commitment]),
      relayData: relayDataFor(accounts, CHANGE_FEE_BPS),
    });
  });

  describe("a valid withdrawal", function () {
    it("is accepted by the verifier alone", async function () {
      const { verifier } = await loadFixture(aspRootPublished);
      const { pA, pB, pC, pubSignals } = partial.proof;
      expect(await verifier.verifyProof(pA, pB, pC, pubSignals)).to.equal(true);
    });

    it("pays the recipient the withdrawn value minus the fee and accrues the fee to the fee recipient, exact to the atom", async function () {
      const { entrypoint, privacyPool, usdc, scope, accounts, note } = await loadFixture(aspRootPublished);
      const fee = 61_728n;

      // Relayed by an account with no role: relaying is open to anyone.
      const relay = entrypoint.connect(accounts.stranger).relay(partial.withdrawal, partial.proof, scope, partial.stateTreeSize);
      await expect(relay).to.changeTokenBalances(
        ethers,
        usdc,
        [privacyPool, accounts.recipient, accounts.feeRecipient, entrypoint, accounts.stranger],
        [-(PARTIAL_WITHDRAWAL - fee), PARTIAL_WITHDRAWAL - fee, 0n, 0n, 0n],
      );
      await expect(relay)
        .to.emit(privacyPool, "Withdrawn")
        .withArgs(PARTIAL_WITHDRAWAL, nullifierHashOf(note.nullifier), partial.changeNote.commitment);
      expect(await privacyPool.accruedFeesOf(accounts.feeRecipient)).to.equal(fee);
    });

    it("lets anyone claim a fee recipient's fees for it, all but the unit the pool keeps, and nothing twice", async function () {
      const { entrypoint, privacyPool, usdc, scope, accounts } = await loadFixture(aspRootPublished);
      const fee = 61_728n;
      await entrypoint.relay(partial.withdrawal, partial.proof, scope, partial.stateTreeSize);

      const claim = privacyPool.connect(accounts.stranger).claimFees(accounts.feeRecipient);
      await expect(claim).to.changeTokenBalances(ethers, usdc, [privacyPool, accounts.feeRecipient, accounts.stranger], [-(fee - 1n), fee - 1n, 0n]);
      await expect(claim).to.emit(privacyPool, "FeesClaimed").withArgs(accounts.feeRecipient.address, fee - 1n);
      expect(await privacyPool.accruedFeesOf(accounts.feeRecipient)).to.equal(1n);
      await expect(privacyPool.claimFees(accounts.feeRecipient)).to.be.revertedWithCustomError(privacyPool, "NoFeesToClaim");
      await expect(privacyPool.claimFees(accounts.stranger)).to.be.revertedWithCustomError(privacyPool, "NoFeesToClaim");

      // A later fee accrues on top of the kept unit, and the next claim pays that fee whole.
      await entrypoint.relay(ofChange.withdrawal, ofChange.proof, scope, ofChange.stateTreeSize);
      const changeFee = (partial.changeNote.value * CHANGE_FEE_BPS) / 10_000n;
      await expect(privacyPool.claimFees(accounts.feeRecipient)).to.changeTokenBalance(ethers, usdc, accounts.feeRecipient, changeFee);
    });

    it("pays the recipient straight from the pool: one transfer, none through the entrypoint", async function () {
      const { entrypoint, privacyPool, usdc, scope, accounts } = await loadFixture(aspRootPublished);
      const receipt = await (await entrypoint.relay(partial.withdrawal, partial.proof, scope, partial.stateTreeSize)).wait();
      const transfers = receipt!.logs
        .filter((log) => log.address === usdc.target)
        .map((log) => usdc.interface.parseLog(log)!)
        .map(({ name, args }) => [name, args[0], args[1], args[2]]);
      const pool = await privacyPool.getAddress();
      expect(transfers).to.deep.equal([["Transfer", pool, accounts.recipient.address, PARTIAL_WITHDRAWAL - 61_728n]]);
    });

    it("spends the note and inserts its change note, with events matching a TypeScript LeanIMT", async function () {
      const { entrypoint, privacyPool, scope, note, stateLeaves } = await loadFixture(aspRootPublished);
      const tree = createLeanIMT([...stateLeaves, partial.changeNote.commitment]);

      const relay = entrypoint.relay(partial.withdrawal, partial.proof, scope, partial.stateTreeSize);
      await expect(relay)
        .to.emit(privacyPool, "Withdrawn")
        .withArgs(
          PARTIAL_WITHDRAWAL,
          nullifierHashOf(note.nullifier),
          partial.changeNote.commitment,
        );
      await expect(relay)
        .to.emit(privacyPool, "LeafInserted")
        .withArgs(stateLeaves.length, partial.changeNote.commitment, tree.root);
      expect(partial.changeNote.value).to.equal(NOTE_VALUE - PARTIAL_WITHDRAWAL);
      expect(await privacyPool.currentRoot()).to.equal(tree.root);
      expect(await privacyPool.isNullifierSpent(nullifierHashOf(note.nullifier))).to.equal(true);
    });

    it("withdraws a change note in full, leaving a zero-value change leaf", async function () {
      const { entrypoint, privacyPool, usdc, scope, accounts, stateLeaves } = await loadFixture(partiallyWithdrawn);
      const withdrawn = partial.changeNote.value;
      const fee = 94_135n;
      const leaves = [...stateLeaves, partial.changeNote.commitment, ofChange.changeNote.commitment];

      const relay = entrypoint.relay(ofChange.withdrawal, ofChange.proof, scope, ofChange.stateTreeSize);
      await expect(relay).to.changeTokenBalances(
        ethers,
        usdc,
        [privacyPool, accounts.recipient],
        [-(withdrawn - fee), withdrawn - fee],
      );
      await expect(relay)
        .to.emit(privacyPool, "LeafInserted")
        .withArgs(leaves.length - 1, ofChange.changeNote.commitment, createLeanIMT(leaves).root);
      expect(ofChange.changeNote.value).to.equal(0n);
      // What remains in the pool is exactly the other depositor's note and the fees of both withdrawals.
      const fees = 61_728n + fee;
      expect(await privacyPool.accruedFeesOf(accounts.feeRecipient)).to.equal(fees);
      expect(await usdc.balanceOf(privacyPool)).to.equal(2_000_000n + fees);
    });

    it("accepts a proof against an older ASP root still inside the window", async function () {
      const { entrypoint, privacyPool, scope } = await loadFixture(aspRootPublished);
      const window = await entrypoint.ROOT_HISTORY_SIZE();
      for (let i = 1n; i < window; i++) await entrypoint.updateRoot(i, 0n, `bafy-later-${i}`);
      await networkHelpers.mine(await entrypoint.ROOT_MIN_LIFETIME_BLOCKS());

      await expect(entrypoint.relay(partial.withdrawal, partial.proof, scope, partial.stateTreeSize)).to.emit(privacyPool, "Withdrawn");
    });

    it("accepts a proof against an older state root still inside the window", async function () {
      const facilitator = await loadFixture(aspRootPublished);
      const { entrypoint, privacyPool, usdc, scope, accounts } = facilitator;
      const laterDeposits = (await privacyPool.ROOT_HISTORY_SIZE()) - 1n;
      await fundDepositor(facilitator, accounts.otherDepositor, laterDeposits * 1_000_000n);
      for (let i = 0n; i < laterDeposits; i++) {
        await entrypoint.connect(accounts.otherDepositor).deposit(usdc, 1_000_000n, 100n + i);
      }
      await networkHelpers.mine(await privacyPool.ROOT_MIN_LIFETIME_BLOCKS());

      await expect(entrypoint.relay(partial.withdrawal, partial.proof, scope, partial.stateTreeSize)).to.emit(privacyPool, "Withdrawn");
    });
  });

  describe("rejections", function () {
    it("rejects a withdrawal whose relay fee was changed after proving: the refund note's value would not be the payout", async function () {
      const { entrypoint, scope, accounts } = await loadFixture(aspRootPublished);
      const lowered = { ...relayDataFor(accounts, PARTIAL_FEE_BPS), relayFeeBPS: PARTIAL_FEE_BPS - 1n };
      const withdrawal = { ...partial.withdrawal, data: encodeRelayData(lowered) };
      await expect(entrypoint.relay(withdrawal, partial.proof, scope, partial.stateTreeSize)).to.be.revertedWithCustomError(
        entrypoint,
        "RelayFeeMismatch",
      );
    });

    it("rejects a second withdrawal of the same note", async function () {
      const { entrypoint, privacyPool, scope } = await loadFixture(partiallyWithdrawn);
      await expect(entrypoint.relay(partial.withdrawal, partial.proof, scope, partial.stateTreeSize)).to.be.revertedWithCustomError(
        privacyPool,
        "NullifierAlreadySpent",
      );
    });

    it("rejects a withdrawal of a note its depositor has ragequit", async function () {
      const { entrypoint, privacyPool, scope, note, accounts } = await loadFixture(aspRootPublished);
      await ragequitNote(privacyPool, accounts.depositor, note);

      await expect(entrypoint.relay(partial.withdrawal, partial.proof, scope, partial.stateTreeSize)).to.be.revertedWithCustomError(
        privacyPool,
        "NullifierAlreadySpent",
      );
    });

    it("rejects a proof against a state root older than the root history and the minimum lifetime", async function () {
      const facilitator = await loadFixture(aspRootPublished);
      const { entrypoint, privacyPool, usdc, scope, accounts } = facilitator;
      const laterDeposits = await privacyPool.ROOT_HISTORY_SIZE();
      await fundDepositor(facilitator, accounts.otherDepositor, laterDeposits * 1_000_000n);
      for (let i = 0n; i < laterDeposits; i++) {
        await entrypoint.connect(accounts.otherDepositor).deposit(usdc, 1_000_000n, 100n + i);
      }
      await networkHelpers.mine(await privacyPool.ROOT_MIN_LIFETIME_BLOCKS());

      await expect(entrypoint.relay(partial.withdrawal, partial.proof, scope, partial.stateTreeSize)).to.be.revertedWithCustomError(
        privacyPool,
        "UnknownStateRoot",
      );
    });

    it("rejects a proof against a state root the pool never had", async function () {
      const { entrypoint, privacyPool, scope } = await loadFixture(aspRootPublished);
      const proof = withSignal(partial.proof, "stateRoot", 12345n);
      await expect(entrypoint.relay(partial.withdrawal, proof, scope, partial.stateTreeSize)).to.be.revertedWithCustomError(
        privacyPool,
        "UnknownStateRoot",
      );
    });

    it("rejects a state tree size whose root is not the proof's state root", async function () {
      const { entrypoint, privacyPool, scope } = await loadFixture(aspRootPublished);
      for (const size of [partial.stateTreeSize - 1n, partial.stateTreeSize + 1n, 0n]) {
        await expect(entrypoint.relay(partial.withdrawal, partial.proof, scope, size)).to.be.revertedWithCustomError(
          privacyPool,
          "UnknownStateRoot",
        );
      }
    });

    it("rejects a proof against an ASP root that was never published", async function () {
      const { entrypoint, scope } = await loadFixture(depositedNotes);
      await expect(entrypoint.relay(partial.withdrawal, partial.proof, scope, partial.stateTreeSize)).to.be.revertedWithCustomError(
        entrypoint,
        "UnknownAspRoot",
      );
    });

    it("rejects a proof against an ASP root older than the window and the minimum lifetime", async function () {
      const { entrypoint, scope } = await loadFixture(aspRootPublished);
      const window = await entrypoint.ROOT_HISTORY_SIZE();
      for (let i = 1n; i <= window; i++) await entrypoint.updateRoot(i, 0n, `bafy-later-${i}`);
      await networkHelpers.mine(await entrypoint.ROOT_MIN_LIFETIME_BLOCKS());

      await expect(entrypoint.relay(partial.withdrawal, partial.proof, scope, partial.stateTreeSize)).to.be.revertedWithCustomError(
        entrypoint,
        "UnknownAspRoot",
      );
    });

    for (const [change, tamper] of [
      ["recipient", (relay: RelayData, stranger: string) => ({ ...relay, recipient: stranger })],
      ["fee recipient", (relay: RelayData, stranger: string) => ({ ...relay, feeRecipient: stranger })],
    ] as const) {
      it(`rejects a withdrawal whose ${change} was changed after proving`, async function () {
        const { entrypoint, privacyPool, scope, accounts } = await loadFixture(aspRootPublished);
        const proven = relayDataFor(accounts, PARTIAL_FEE_BPS);
        const withdrawal = { ...partial.withdrawal, data: encodeRelayData(tamper(proven, accounts.stranger.address)) };

        await expect(entrypoint.relay(withdrawal, partial.proof, scope, partial.stateTreeSize)).to.be.revertedWithCustomError(
          entrypoint,
          "ContextMismatch",
        );
      });
    }

    it("rejects a relay fee above the pool's maximum", async function () {
      const { entrypoint, usdc, scope, accounts } = await loadFixture(aspRootPublished);
      const { maxRelayFeeBPS } = await entrypoint.assetConfig(usdc);
      const data = encodeRelayData(relayDataFor(accounts, maxRelayFeeBPS + 1n));

      await expect(
        entrypoint.relay({ ...partial.withdrawal, data }, partial.proof, scope, partial.stateTreeSize),
      ).to.be.revertedWithCustomError(entrypoint, "RelayFeeAboveMaximum");
    });

    it("rejects a withdrawal whose processooor is not the entrypoint", async function () {
      const { entrypoint, scope, accounts } = await loadFixture(aspRootPublished);
      const withdrawal = { ...partial.withdrawal, processooor: accounts.stranger.address };

      await expect(entrypoint.relay(withdrawal, partial.proof, scope, partial.stateTreeSize)).to.be.revertedWithCustomError(
        entrypoint,
        "InvalidProcessooor",
      );
    });

    it("rejects a scope no pool is registered under", async function () {
      const { entrypoint, scope } = await loadFixture(aspRootPublished);
      await expect(entrypoint.relay(partial.withdrawal, partial.proof, scope + 1n, partial.stateTreeSize)).to.be.revertedWithCustomError(
        entrypoint,
        "UnknownScope",
      );
    });

    it("rejects a proof whose stateTreeDepth is not the depth recorded with its state root", async function () {
      const { entrypoint, privacyPool, scope } = await loadFixture(aspRootPublished);
      const proof = withPackedParts(partial.proof, { stateTreeDepth: 33n });

      await expect(entrypoint.relay(partial.withdrawal, proof, scope, partial.stateTreeSize)).to.be.revertedWithCustomError(
        privacyPool,
        "StateTreeDepthMismatch",
      );
    });

    it("rejects a proof whose aspTreeDepth is not the depth published with its ASP root", async function () {
      const { entrypoint, scope } = await loadFixture(aspRootPublished);
      const proof = withPackedParts(partial.proof, { aspTreeDepth: 33n });

      await expect(entrypoint.relay(partial.withdrawal, proof, scope, partial.stateTreeSize)).to.be.revertedWithCustomError(
        entrypoint,
        "AspTreeDepthMismatch",
      );
    });

    it("rejects a proof whose withdrawn value was raised after proving", async function () {
      const { entrypoint, privacyPool, scope } = await loadFixture(aspRootPublished);
      const proof = withPackedParts(partial.proof, { withdrawnValue: NOTE_VALUE });

      await expect(entrypoint.relay(partial.withdrawal, proof, scope, partial.stateTreeSize)).to.be.revertedWithCustomError(
        privacyPool,
        "InvalidProof",
      );
    });

    it("rejects a nullifier hash lifted by the field's order, the same statement to the curve, and leaves the note spendable", async function () {
      const { entrypoint, privacyPool, scope, note } = await loadFixture(aspRootPublished);
      const nullifierHash = nullifierHashOf(note.nullifier);
      const proof = withSignal(partial.proof, "nullifierHash", nullifierHash + SNARK_SCALAR_FIELD);

      await expect(entrypoint.relay(partial.withdrawal, proof, scope, partial.stateTreeSize)).to.be.revertedWithCustomError(
        privacyPool,
        "InvalidProof",
      );
      expect(await privacyPool.isNullifierSpent(nullifierHash + SNARK_SCALAR_FIELD)).to.equal(false);
      await expect(entrypoint.relay(partial.withdrawal, partial.proof, scope, partial.stateTreeSize)).to.emit(privacyPool, "Withdrawn");
    });

    it("rejects a proof whose point is not on the curve", async function () {
      const { entrypoint, privacyPool, scope } = await loadFixture(aspRootPublished);
      const [x, y] = partial.proof.pA;
      const proof = { ...partial.proof, pA: [x, y + 1n] as [bigint, bigint] };

      await expect(entrypoint.relay(partial.withdrawal, proof, scope, partial.stateTreeSize)).to.be.revertedWithCustomError(
        privacyPool,
        "InvalidProof",
      );
    });
  });
});
