import { aspContentId } from "../indexer/asp/root-publisher.js";
import { screenDeposit } from "../indexer/asp/screen-deposit.js";
import type { ScreeningLists } from "../indexer/asp/screening-lists.js";
import type { BlockRef, IndexerStore } from "../indexer/store/indexer-store.js";
import { IndexedTree } from "../indexer/trees.js";

/** Distinct depositors among the seeded deposits (what the anonymity set counts). */
const DEPOSITORS = 5_000;

/** `count` distinct field elements: what they are does not change the cost of hashing or serving them. */
export const benchLeaves = (count: number): bigint[] => Array.from({ length: count }, (_, i) => BigInt(i + 1) * 0x9e3779b97f4a7c15n);

/**
 * Writes into `store` (bound to its deployment) what an indexer holds after syncing `leaves` as deposits up to
 * `cursor`: one leaf and one deposit each, every depositor screened by `lists` (none listed: every label approved).
 * With `recordAspRoot`, the ASP root of all their labels is on record too, as after the curator published it;
 * without, the curator publishes it on chain itself at its next publish. Returns the labels, in leaf order.
 */
export async function seedIndexerStore(
  store: IndexerStore,
  { leaves, cursor, lists, recordAspRoot }: { leaves: readonly bigint[]; cursor: BlockRef; lists: ScreeningLists; recordAspRoot: boolean },
): Promise<bigint[]> {
  const txHash = `0x${"00".repeat(32)}`;
  const at = (logIndex: number) => ({ blockNumber: cursor.number, txHash, logIndex });
  const labels = leaves.map((leaf) => leaf ^ 0x5a5an);
  const depositorOf = (i: number) => `0x${(0x1000 + (i % DEPOSITORS)).toString(16).padStart(40, "0")}`;
  const deposits = leaves.map((commitment, i) => ({
    label: labels[i]!,
    depositor: depositorOf(i),
    commitment,
    value: 1_000_000n,
    precommitment: commitment + 1n,
    ...at(2 * i + 1),
  }));
  const now = new Date(0);
  await store.applyBatch({
    cursor,
    blocks: [cursor],
    leaves: leaves.map((commitment, leafIndex) => ({ leafIndex, commitment, ...at(2 * leafIndex) })),
    deposits,
    spentNullifiers: [],
    aspRoots: recordAspRoot ? [{ root: (await IndexedTree.build(labels)).root, cid: aspContentId(labels), timestamp: 1, ...at(2 * leaves.length) }] : [],
    aspDecisions: deposits.map((deposit) => screenDeposit(deposit, lists, now)),
  });
  return labels;
}
