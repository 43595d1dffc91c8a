import { anyValue } from "@nomicfoundation/hardhat-ethers-chai-matchers/withArgs";
import { expect } from "chai";
import { network } from "hardhat";
import { createLeanIMT, MAX_TREE_DEPTH, nodeHash, type MerkleWitness, type Note } from "../../sdk/index.js";
import { deployedFacilitator } from "./helpers/fixtures.js";
import { depositNote, fundDepositor, secretsFor } from "./helpers/notes.js";
import { proveRelayedWithdrawal, type RelayedWithdrawal } from "./helpers/withdrawals.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture } = networkHelpers;

const NOTE_VALUE = 2_000_000n;
const WITHDRAWAL = 500_000n;

/** A depth-`depth` path of the leaf at `index`, siblings padded to the circuit's maximum. */
function pathOf(root: bigint, depth: number, index: number, siblings: bigint[]): MerkleWitness {
  return { root, depth, index, siblings: [...siblings, ...Array<bigint>(MAX_TREE_DEPTH - siblings.length).fill(0n)] };
}

/**
 * Three deposits: `kept` (the depositor's), `excluded` (the other depositor's, later excluded) and `late` (a third
 * depositor's). The postman publishes, revoking nothing, the ASP roots of [kept], [kept, excluded] and
 * [kept, excluded, late].
 */
async function threeDeposits() {
  const facilitator = await loadFixture(deployedFacilitator);
  const { depositor, otherDepositor, stranger } = facilitator.accounts;
  const kept = await depositNote(facilitator, depositor, NOTE_VALUE, secretsFor(1n));
  const excluded = await depositNote(facilitator, otherDepositor, NOTE_VALUE, secretsFor(2n));
  const late = await depositNote(facilitator, stranger, NOTE_VALUE, secretsFor(3n));
  const aspTrees = {
    beforeExcluded: createLeanIMT([kept.label]),
    withExcluded: createLeanIMT([kept.label, excluded.label]),
    all: createLeanIMT([kept.label, excluded.label, late.label]),
    afterExclusion: createLeanIMT([kept.label, late.label]),
  };
  for (const tree of [aspTrees.beforeExcluded, aspTrees.withExcluded, aspTrees.all]) {
    await facilitator.entrypoint.updateRoot(tree.root, tree.depth, `bafy-${tree.size}`);
  }
  const stateTree = createLeanIMT([kept.commitment, excluded.commitment, late.commitment]);
  return { ...facilitator, notes: { kept, excluded, late }, aspTrees, stateTree };
}

/** threeDeposits after the postman revoked every earlier root but the one published before `excluded` was approved. */
async function excludedRevoked() {
  const facilitator = await loadFixture(threeDeposits);
  const { afterExclusion, beforeExcluded } = facilitator.aspTrees;
  await facilitator.entrypoint.revokeAndUpdateRoot(afterExclusion.root, afterExclusion.depth, "bafy-revoking", [beforeExcluded.root]);
  return facilitator;
}

let ofKept: RelayedWithdrawal;
let ofExcluded: RelayedWithdrawal;
let shallowState: RelayedWithdrawal;
let shallowAsp: RelayedWithdrawal;

describe("root histories", function () {
  before(async function () {
    const { notes, aspTrees, stateTree, entrypoint, scope, accounts } = await loadFixture(threeDeposits);
    const common = {
      withdrawnValue: WITHDRAWAL,
      stateTree,
      entrypoint: await entrypoint.getAddress(),
      scope,
      relayData: { recipient: accounts.recipient.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n },
    };
    const prove = (note: Note, aspTree: typeof aspTrees.all, paths: Partial<Parameters<typeof proveRelayedWithdrawal>[0]> = {}) =>
      proveRelayedWithdrawal({ ...common, note, aspTree, ...paths });
    ofKept = await prove(notes.kept, aspTrees.beforeExcluded);
    ofExcluded = await prove(notes.excluded, aspTrees.all);
    // The third leaf of a three-leaf LeanIMT (depth 2) is promoted at level 0, so it also has a depth-1 path: its
    // sibling is the hash of the first two leaves, and it sits at index 1.
    const { kept, excluded, late } = notes;
    shallowState = await prove(late, aspTrees.all, {
      stateWitness: pathOf(stateTree.root, 1, 1, [nodeHash(kept.commitment, excluded.commitment)]),
    });
    shallowAsp = await prove(late, aspTrees.all, {
      aspWitness: pathOf(aspTrees.all.root, 1, 1, [nodeHash(kept.label, excluded.label)]),
    });
  });

  describe("revocation", function () {
    it("lets the excluded label withdraw by a direct relay call before its revoking root", async function () {
      const { entrypoint, privacyPool, scope, accounts } = await loadFixture(threeDeposits);
      await expect(entrypoint.connect(accounts.stranger).relay(ofExcluded.withdrawal, ofExcluded.proof, scope, ofExcluded.stateTreeSize)).to.emit(
        privacyPool,
        "Withdrawn",
      );
    });

    it("refuses the excluded label's direct relay call in the block after its revoking root", async function () {
      const { entrypoint, scope, accounts, aspTrees } = await loadFixture(excludedRevoked);
      await expect(
        entrypoint.connect(accounts.stranger).relay(ofExcluded.withdrawal, ofExcluded.proof, scope, ofExcluded.stateTreeSize),
      ).to.be.revertedWithCustomError(entrypoint, "AspRootRevoked");
      for (const revoked of [aspTrees.withExcluded, aspTrees.all]) {
        expect(await entrypoint.isKnownAspRoot(revoked.root)).to.equal(false);
        expect(await entrypoint.isRevokedAspRoot(revoked.root)).to.equal(true);
      }
    });

    it("still relays another label's proof against the kept root, published before and revoking nothing", async function () {
      const { entrypoint, privacyPool, scope, accounts, aspTrees } = await loadFixture(excludedRevoked);
      expect(await entrypoint.isKnownAspRoot(aspTrees.beforeExcluded.root)).to.equal(true);
      await expect(entrypoint.connect(accounts.stranger).relay(ofKept.withdrawal, ofKept.proof, scope, ofKept.stateTreeSize)).to.emit(
        privacyPool,
        "Withdrawn",
      );
    });

    it("refuses every earlier root the revocation does not keep", async function () {
      const { entrypoint, scope, aspTrees } = await loadFixture(threeDeposits);
      const { afterExclusion } = aspTrees;
      await entrypoint.revokeAndUpdateRoot(afterExclusion.root, afterExclusion.depth, "bafy-revoking-all", []);

      await expect(entrypoint.relay(ofKept.withdrawal, ofKept.proof, scope, ofKept.stateTreeSize)).to.be.revertedWithCustomError(
        entrypoint,
        "AspRootRevoked",
      );
      expect(await entrypoint.isKnownAspRoot(afterExclusion.root)).to.equal(true);
      expect(await entrypoint.latestRoot()).to.equal(afterExclusion.root);
    });

    it("announces the revocation and the kept roots", async function () {
      const { entrypoint, aspTrees } = await loadFixture(threeDeposits);
      const { afterExclusion, beforeExcluded } = aspTrees;
      const revoke = entrypoint.revokeAndUpdateRoot(afterExclusion.root, afterExclusion.depth, "bafy-revoking", [beforeExcluded.root]);
      await expect(revoke).to.emit(entrypoint, "AspRootsRevoked").withArgs([beforeExcluded.root]);
      const { timestamp } = (await (await (await revoke).wait())!.getBlock());
      await expect(revoke)
        .to.emit(entrypoint, "RootUpdated")
        .withArgs(afterExclusion.root, afterExclusion.depth, "bafy-revoking", timestamp, true);
    });

    it("refuses to keep a root that is not accepted: never published, or already revoked", async function () {
      const { entrypoint, aspTrees } = await loadFixture(excludedRevoked);
      for (const root of [12_345n, aspTrees.withExcluded.root]) {
        await expect(entrypoint.revokeAndUpdateRoot(777n, 0n, "bafy-bad-keep", [root]))
          .to.be.revertedWithCustomError(entrypoint, "KeptRootNotAccepted")
          .withArgs(root);
      }
    });

    it("lets only the postman revoke", async function () {
      const { entrypoint, accounts } = await loadFixture(threeDeposits);
      await expect(entrypoint.connect(accounts.stranger).revokeAndUpdateRoot(777n, 0n, "bafy-not-postman", []))
        .to.be.revertedWithCustomError(entrypoint, "AccessControlUnauthorizedAccount")
        .withArgs(accounts.stranger.address, await entrypoint.POSTMAN_ROLE());
    });

    it("revokes to the empty set with a zero root: no root is accepted, not even zero", async function () {
      const { entrypoint, scope, aspTrees } = await loadFixture(threeDeposits);
      await expect(entrypoint.revokeAndUpdateRoot(0n, 0n, "bafy-empty", []))
        .to.emit(entrypoint, "RootUpdated")
        .withArgs(0n, 0n, "bafy-empty", anyValue, true);

      expect(await entrypoint.latestRoot()).to.equal(0n);
      for (const tree of Object.values(aspTrees)) expect(await entrypoint.isKnownAspRoot(tree.root)).to.equal(false);
      expect(await entrypoint.isKnownAspRoot(0n)).to.equal(false);
      await expect(entrypoint.relay(ofKept.withdrawal, ofKept.proof, scope, ofKept.stateTreeSize)).to.be.revertedWithCustomError(
        entrypoint,
        "AspRootRevoked",
      );
    });
  });

  describe("depth", function () {
    it("gives each accepted state root the depth of its tree", async function () {
      const { privacyPool, stateTree } = await loadFixture(threeDeposits);
      expect(await privacyPool.stateTreeDepthAt(stateTree.root)).to.equal(2n);
      expect(await privacyPool.stateTreeDepthAt(createLeanIMT([stateTree.leaves[0]!]).root)).to.equal(0n);
    });

    it("refuses a valid proof of a state path one level shallower than the recorded depth", async function () {
      const { entrypoint, privacyPool, verifier, scope } = await loadFixture(threeDeposits);
      const { pA, pB, pC, pubSignals } = shallowState.proof;
      expect(await verifier.verifyProof(pA, pB, pC, pubSignals), "the verifier alone accepts it").to.equal(true);

      await expect(entrypoint.relay(shallowState.withdrawal, shallowState.proof, scope, shallowState.stateTreeSize)).to.be.revertedWithCustomError(
        privacyPool,
        "StateTreeDepthMismatch",
      );
    });

    it("refuses a valid proof of an ASP path one level shallower than the published depth", async function () {
      const { entrypoint, verifier, scope } = await loadFixture(threeDeposits);
      const { pA, pB, pC, pubSignals } = shallowAsp.proof;
      expect(await verifier.verifyProof(pA, pB, pC, pubSignals), "the verifier alone accepts it").to.equal(true);

      await expect(entrypoint.relay(shallowAsp.withdrawal, shallowAsp.proof, scope, shallowAsp.stateTreeSize)).to.be.revertedWithCustomError(
        entrypoint,
        "AspTreeDepthMismatch",
      );
    });
  });

  describe("a flood of minimum deposits", function () {
    it("cannot evict the state root of a proof in flight within one block", async function () {
      const facilitator = await loadFixture(threeDeposits);
      const { entrypoint, privacyPool, usdc, scope, accounts } = facilitator;
      const flood = (await privacyPool.ROOT_HISTORY_SIZE()) + 6n;
      const { minimumDepositAmount } = await entrypoint.assetConfig(usdc);
      await fundDepositor(facilitator, accounts.otherDepositor, flood * minimumDepositAmount);
      const sizeBefore = await privacyPool.currentTreeSize();

      await ethers.provider.send("evm_setAutomine", [false]);
      const sent = [];
      try {
        for (let i = 0n; i < flood; i++) {
          sent.push(await entrypoint.connect(accounts.otherDepositor).deposit(usdc, minimumDepositAmount, 500n + i, { gasLimit: 1_000_000n }));
        }
        await networkHelpers.mine();
      } finally {
        await ethers.provider.send("evm_setAutomine", [true]);
      }
      const blocks = new Set((await Promise.all(sent.map((tx) => tx.wait()))).map((receipt) => receipt!.blockNumber));
      expect(blocks.size, "every flood deposit in one block").to.equal(1);
      expect(await privacyPool.currentTreeSize()).to.equal(sizeBefore + flood);

      await expect(entrypoint.relay(ofKept.withdrawal, ofKept.proof, scope, ofKept.stateTreeSize)).to.emit(privacyPool, "Withdrawn");
    });

    it("lets the flooded root go once it is older than the minimum lifetime", async function () {
      const facilitator = await loadFixture(threeDeposits);
      const { entrypoint, privacyPool, usdc, scope, accounts, stateTree } = facilitator;
      const flood = await privacyPool.ROOT_HISTORY_SIZE();
      await fundDepositor(facilitator, accounts.otherDepositor, flood * 1_000_000n);
      for (let i = 0n; i < flood; i++) await entrypoint.connect(accounts.otherDepositor).deposit(usdc, 1_000_000n, 500n + i);
      expect(await privacyPool.isKnownStateRoot(stateTree.root), "younger than the minimum lifetime").to.equal(true);

      await networkHelpers.mine(await privacyPool.ROOT_MIN_LIFETIME_BLOCKS());
      await expect(entrypoint.relay(ofKept.withdrawal, ofKept.proof, scope, ofKept.stateTreeSize)).to.be.revertedWithCustomError(
        privacyPool,
        "UnknownStateRoot",
      );
    });
  });
});
