import { pino } from "pino";
import { configuredScreeningLists } from "../../indexer/asp/screening-lists.js";
import type { IndexerConfig } from "../../indexer/config.js";
import { openIndexerStore } from "../../indexer/store/open-store.js";
import type { LocalChain } from "../../test/indexer/helpers/local-chain.js";
import { benchLeaves, seedIndexerStore } from "../seeded-indexer-store.js";
import { fillStateTree } from "../simulated-state-tree.js";

/**
 * Makes `chain`'s pool one that already holds `count` leaves, consistently on chain and in the indexer's empty
 * database at `config.dbPath`: the pool's storage as `count` deposits leave it (bench/simulated-state-tree.ts), a
 * block mined on it, and the database synced up to that block with the same leaves as deposits whose labels are
 * approved. The indexer then follows real deposits from the next block on, as leaves `count`, `count + 1`, ...;
 * its curator publishes the ASP root of all the labels with the first of them. Returns the state root.
 */
export async function seedPool(chain: LocalChain, config: IndexerConfig, count: number): Promise<bigint> {
  const leaves = benchLeaves(count);
  const { connection, facilitator } = chain;
  const tree = await fillStateTree(connection, facilitator.privacyPool, leaves);
  await connection.networkHelpers.mine();
  const head = await connection.ethers.provider.getBlock("latest");
  if (head === null || head.hash === null) throw new Error("the chain has no head block after the fill");

  const lists = configuredScreeningLists(config, pino({ level: "silent" }));
  await lists.load();
  const store = await openIndexerStore(config);
  try {
    const { chainId, privacyPool } = facilitator.addressBook;
    await store.bindDeployment(`${chainId}:${privacyPool}`);
    await seedIndexerStore(store, { leaves, cursor: { number: head.number, hash: head.hash }, lists, recordAspRoot: false });
  } finally {
    await store.close();
  }
  return tree.root;
}
