import type { BlockRef, IndexerStore } from "../store/indexer-store.js";

/** Raised when a block the indexer has read, or is reading, is no longer on the chain. */
export class ReorgDetected extends Error {
  constructor(detail: string) {
    super(`chain reorganised: ${detail}`);
    this.name = "ReorgDetected";
  }
}

const PAGE = 64;

/**
 * The newest remembered block that is still on the chain: everything up to it stays, everything after it is
 * read again. Null when none is left (a reorg deeper than the deployment block), which means a full resync.
 */
export async function findCommonAncestor(
  store: Pick<IndexerStore, "knownBlocks">,
  chain: { blockRef(number: number): Promise<BlockRef | null> },
  from: number,
): Promise<BlockRef | null> {
  for (let below = from; ; ) {
    const known = await store.knownBlocks(below, PAGE);
    for (const block of known) {
      if ((await chain.blockRef(block.number))?.hash === block.hash) return block;
    }
    const oldest = known.at(-1);
    if (oldest === undefined) return null;
    below = oldest.number - 1;
  }
}
