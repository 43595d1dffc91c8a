import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type { AspCurator } from "./asp/curator.js";
import type { ChainReader } from "./chain/chain-reader.js";
import type { ChainEvents } from "./chain/events.js";
import { findCommonAncestor, ReorgDetected } from "./chain/reorg.js";
import { backoffDelay } from "./chain/retry.js";
import { SavedTree } from "./saved-tree.js";
import type { BlockRef, IndexerStore } from "./store/indexer-store.js";
import { SyncProgress } from "./sync-progress.js";
import { IndexedTree } from "./trees.js";

export interface SyncOptions {
  /** The deployment block: nothing before it is read. */
  startBlock: number;
  /** Blocks to stay behind the head. */
  confirmations: number;
  /** Most blocks one eth_getLogs asks for. */
  maxBlockRange: number;
}

export interface IndexerSyncDeps {
  chain: ChainReader;
  store: IndexerStore;
  curator: AspCurator;
  logger: Logger;
  options: SyncOptions;
}

/** The rebuilt state tree does not have the pool's root: events are missing or were misread. */
export class StateRootMismatch extends Error {
  constructor(block: number, local: bigint, chain: bigint) {
    super(`state root mismatch at block ${block}: rebuilt ${local}, pool ${chain}`);
    this.name = "StateRootMismatch";
  }
}

const MAX_FAILURE_BACKOFF_MS = 60_000;

/**
 * Follows the pool and the entrypoint: reads confirmed blocks in bounded ranges, rebuilds the state tree, checks
 * its root against the pool after every batch, stores each batch in one transaction, resumes from the stored
 * cursor and reads again whatever a reorg replaced.
 */
export class IndexerSync {
  private tree = IndexedTree.of([]);
  private cursor: BlockRef | null = null;
  private caughtUp = false;
  private rootCheck: { block: number; matches: boolean } | null = null;
  private readonly savedTree: SavedTree;

  constructor(private readonly deps: IndexerSyncDeps) {
    this.savedTree = new SavedTree(deps.store, "state");
  }

  get stateTree(): IndexedTree {
    return this.tree;
  }

  get lastBlock(): number | null {
    return this.cursor?.number ?? null;
  }

  /** How many blocks below the chain head it stops reading, so that a shallow reorg never reaches what it read. */
  get confirmations(): number {
    return this.deps.options.confirmations;
  }

  /** Caught up with the confirmed head at least once since start; until then the indexer is cold. */
  get synced(): boolean {
    return this.caughtUp;
  }

  get stateRootMatches(): boolean {
    return this.rootCheck?.matches === true;
  }

  /** Rebuilds the in-memory trees from the store: at start, and whenever memory may be ahead of the store. */
  async load(): Promise<void> {
    const [cursor, leaves] = await Promise.all([this.deps.store.cursor(), this.deps.store.leaves()]);
    const tree = await this.savedTree.build(leaves);
    this.cursor = cursor;
    this.tree = tree;
    await this.deps.curator.load();
  }

  /** Reads every confirmed block not read yet. */
  async catchUp(): Promise<void> {
    for (;;) {
      try {
        await this.readToConfirmedHead();
        this.caughtUp = true;
        return;
      } catch (error) {
        if (!(error instanceof ReorgDetected)) throw error;
        await this.rewind();
      }
    }
  }

  /**
   * Follows the chain until `signal` aborts: catch up, screen again when the screening lists changed, publish
   * the ASP root; after a failure, wait longer each time.
   */
  async follow(signal: AbortSignal, pollIntervalMs: number): Promise<void> {
    const { curator, logger } = this.deps;
    for (let failures = 0; !signal.aborted; ) {
      try {
        await this.catchUp();
        await curator.reloadLists();
        await curator.publish();
        failures = 0;
      } catch (error) {
        failures++;
        logger.error({ err: error, failures }, "sync failed, retrying");
      }
      const delayMs =
        failures === 0
          ? pollIntervalMs
          : backoffDelay({ baseDelayMs: pollIntervalMs, maxDelayMs: MAX_FAILURE_BACKOFF_MS }, failures);
      await sleep(delayMs, undefined, { signal }).catch(() => undefined);
    }
  }

  private async readToConfirmedHead(): Promise<void> {
    const { chain, options, logger } = this.deps;
    const target = (await chain.headBlock()) - options.confirmations;
    if (this.cursor !== null) await this.assertOnChain(this.cursor);
    const first = this.nextBlock();
    const progress = new SyncProgress(logger, first, target, !this.caughtUp);
    while (this.nextBlock() <= target) {
      const from = this.nextBlock();
      const to = Math.min(from + options.maxBlockRange - 1, target);
      const events = await this.readBatch(from, to);
      progress.batchDone(to, countEvents(events), this.tree.size);
    }
    if (this.cursor !== null && this.rootCheck?.block !== this.cursor.number) {
      this.checkRoot(this.cursor.number, await chain.stateRootAt(this.cursor.number));
    }
    if (first <= target) progress.finished(this.tree.size);
  }

  private async readBatch(from: number, to: number): Promise<ChainEvents> {
    const { chain, store, curator } = this.deps;
    const end = await chain.blockRef(to);
    if (end === null) throw new ReorgDetected(`block ${to} disappeared while reading`);
    const { events, blocks } = await chain.readRange(from, to);
    // Nothing up to the cursor changed while the range was read: the events extend what is stored.
    if (this.cursor !== null) await this.assertOnChain(this.cursor);

    events.leaves.forEach((leaf, i) => {
      const expected = this.tree.size + i;
      if (leaf.leafIndex !== expected) {
        throw new Error(`expected leaf ${expected}, the chain reported leaf ${leaf.leafIndex}: events are missing`);
      }
    });
    this.tree.append(events.leaves.map((leaf) => leaf.commitment));
    try {
      this.checkRoot(to, await chain.stateRootAt(to));
      const aspDecisions = curator.screen(events);
      await store.applyBatch({ cursor: end, blocks: [...blocks, end], ...events, aspDecisions });
      this.cursor = end;
      curator.applyBatch(events, aspDecisions);
    } catch (error) {
      // The trees hold leaves the store may not: take them back from the store.
      await this.load();
      throw error;
    }
    await Promise.all([this.savedTree.save(this.tree), curator.saveTree()]);
    return events;
  }

  private checkRoot(block: number, chainRoot: bigint): void {
    this.rootCheck = { block, matches: chainRoot === this.tree.root };
    if (!this.rootCheck.matches) throw new StateRootMismatch(block, this.tree.root, chainRoot);
  }

  private async assertOnChain(block: BlockRef): Promise<void> {
    const onChain = await this.deps.chain.blockRef(block.number);
    if (onChain?.hash !== block.hash) throw new ReorgDetected(`block ${block.number} (${block.hash}) was replaced`);
  }

  private async rewind(): Promise<void> {
    const { store, chain, logger } = this.deps;
    const previous = this.cursor;
    if (previous !== null) {
      const ancestor = await findCommonAncestor(store, chain, previous.number);
      await store.rewindTo(ancestor);
      logger.warn(
        { previousBlock: previous.number, keptUpTo: ancestor?.number ?? null },
        "chain reorganised: dropped the replaced blocks, reading them again",
      );
    }
    await this.load();
  }

  private nextBlock(): number {
    return this.cursor === null ? this.deps.options.startBlock : this.cursor.number + 1;
  }
}

function countEvents(events: ChainEvents): number {
  return events.leaves.length + events.deposits.length + events.spentNullifiers.length + events.aspRoots.length;
}
