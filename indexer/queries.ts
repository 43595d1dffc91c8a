import type { AnonymitySet, AspProof, DepositView, IndexerStatus, NullifierStatus, StateProof, TreeLeavesQuery, Trees } from "./api.js";
import type { AspCurator } from "./asp/curator.js";
import { IndexerError } from "./errors.js";
import type { IndexerStore } from "./store/indexer-store.js";
import type { IndexerSync } from "./sync.js";
import type { IndexedTree } from "./trees.js";

export interface IndexerQueriesDeps {
  chainId: number;
  sync: IndexerSync;
  curator: AspCurator;
  store: IndexerStore;
}

/**
 * What the indexer answers, independent of HTTP. Everything but the status refuses to answer while the indexer
 * is cold: a stale tree or nullifier set would give wrong answers (a spent note reported unspent).
 */
export class IndexerQueries {
  constructor(private readonly deps: IndexerQueriesDeps) {}

  /**
   * status(), once the database answered a query: an indexer whose database does not answer serves no nullifier
   * lookup, so its status must not say it serves (the relayer's readiness reads it).
   */
  async servingStatus(): Promise<IndexerStatus> {
    await this.deps.store.latestAspRoot().catch((error: unknown) => {
      throw new IndexerError(
        "STORE_UNAVAILABLE",
        `the indexer's database does not answer (${error instanceof Error ? error.message : String(error)}); nullifier and deposit lookups fail until it does: retry later`,
      );
    });
    return this.status();
  }

  status(): IndexerStatus {
    const { sync, curator, chainId } = this.deps;
    return {
      chainId,
      leafCount: sync.stateTree.size,
      stateRoot: sync.stateTree.root,
      stateRootMatches: sync.stateRootMatches,
      ...curator.status(),
      lastBlock: sync.lastBlock,
      confirmations: sync.confirmations,
      synced: sync.synced,
    };
  }

  stateProof(commitment: bigint): StateProof {
    this.assertWarm();
    const { stateTree } = this.deps.sync;
    const witness = stateTree.witness(commitment);
    if (witness === undefined) {
      throw new IndexerError(
        "DEPOSIT_NOT_FOUND",
        `commitment ${commitment} is not in the state tree (up to block ${this.deps.sync.lastBlock}); check the note's value, label and secrets`,
      );
    }
    return { commitment, witness, stateTreeSize: stateTree.size };
  }

  /** The state tree and the on-chain ASP tree, read at one moment: what a proof made now binds. */
  trees(): Trees {
    const { state, asp } = this.currentTrees();
    return { state: shapeOf(state), asp: shapeOf(asp) };
  }

  /**
   * trees() with the leaves after those the caller has, as the JSON text of TreeLeavesSchema: the leaves come
   * packed from each tree's cache, so the answer costs no parse or print of a leaf, whatever the pool's size.
   */
  treeLeavesJson(from: TreeLeavesQuery): string {
    const { state, asp } = this.currentTrees();
    return `{"state":${treeSliceJson(state, from.stateFrom, from.stateFromRoot)},"asp":${treeSliceJson(asp, from.aspFrom, from.aspFromRoot)}}`;
  }

  aspProof(label: bigint): AspProof {
    this.assertWarm();
    return { label, witness: this.deps.curator.witness(label) };
  }

  /** A payment's own anonymity set (AspCurator.anonymitySetOf). */
  anonymitySet(withdrawnValue: bigint): AnonymitySet {
    this.assertWarm();
    return { withdrawnValue, ...this.deps.curator.anonymitySetOf(withdrawnValue) };
  }

  async nullifier(nullifierHash: bigint): Promise<NullifierStatus> {
    this.assertWarm();
    const spend = await this.deps.store.spentNullifier(nullifierHash);
    return {
      nullifierHash,
      spent: spend !== null,
      spend: spend && { kind: spend.kind, blockNumber: spend.blockNumber, txHash: spend.txHash },
      asOfBlock: this.deps.sync.lastBlock,
    };
  }

  async deposit(label: bigint): Promise<DepositView> {
    this.assertWarm();
    const { store, sync, curator } = this.deps;
    const deposit = await store.deposit(label);
    if (deposit === null) throw new IndexerError("DEPOSIT_NOT_FOUND", `no deposit has label ${label}`);
    const trail = await store.aspAuditTrail(label);
    const leafIndex = sync.stateTree.indexOf(deposit.commitment);
    if (leafIndex === undefined) throw new Error(`deposit ${label} has no leaf in the state tree`);
    return {
      label,
      depositor: deposit.depositor,
      commitment: deposit.commitment,
      value: deposit.value,
      precommitment: deposit.precommitment,
      blockNumber: deposit.blockNumber,
      txHash: deposit.txHash,
      leafIndex,
      ragequit: curator.tookBack(label),
      aspDecisions: trail.map(({ approved, list, reason, listsDigest, decidedAt }) => ({
        approved,
        list,
        reason,
        listsDigest,
        decidedAt,
      })),
    };
  }

  private currentTrees(): { state: IndexedTree; asp: IndexedTree } {
    this.assertWarm();
    return { state: this.deps.sync.stateTree, asp: this.deps.curator.onChainTree() };
  }

  private assertWarm(): void {
    if (!this.deps.sync.synced) {
      throw new IndexerError(
        "INDEXER_COLD",
        `indexer is cold, run a sync: it has not caught up with the chain since it started (last block ${this.deps.sync.lastBlock})`,
      );
    }
  }
}

const shapeOf = (tree: IndexedTree) => ({ root: tree.root, depth: tree.depth, size: tree.size });

/**
 * A tree's shape and its leaves from `from` on; from 0 when it was rebuilt since the caller's leaves: it has fewer
 * leaves than that, or its first `from` leaves make another root than `fromRoot` (when given).
 */
function treeSliceJson(tree: IndexedTree, from: number, fromRoot: bigint | undefined): string {
  const start = from <= tree.size && (fromRoot === undefined || tree.rootAt(from) === fromRoot) ? from : 0;
  return `{"root":"${tree.root}","depth":${tree.depth},"size":${tree.size},"from":${start},"leaves":"${tree.packedLeaves(start)}"}`;
}
