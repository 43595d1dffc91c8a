import type { Provider } from "ethers";
import type { Logger } from "pino";
import type { BlockRef } from "../store/indexer-store.js";
import { LogDecoder, type ChainEvents, type FollowedContracts } from "./events.js";
import { withRetry, type RetryPolicy } from "./retry.js";

export interface RangeRead {
  events: ChainEvents;
  /** The blocks that carried the events, by the hash the logs reported. */
  blocks: BlockRef[];
}

/** The indexer's reads from the chain, each retried with backoff. */
export class ChainReader {
  private readonly decoder: LogDecoder;
  private readonly poolAddress: string;

  constructor(
    private readonly provider: Provider,
    private readonly contracts: FollowedContracts,
    addresses: { pool: string; entrypoint: string },
    private readonly retry: RetryPolicy,
    private readonly logger: Logger,
  ) {
    this.decoder = new LogDecoder(contracts, addresses);
    this.poolAddress = addresses.pool;
  }

  headBlock(): Promise<number> {
    return this.call("eth_blockNumber", () => this.provider.getBlockNumber());
  }

  /** Number and hash of block `number`, null when the chain has no such block (it got shorter). */
  blockRef(number: number): Promise<BlockRef | null> {
    return this.call("eth_getBlockByNumber", async () => {
      const block = await this.provider.getBlock(number);
      return block?.hash ? { number: block.number, hash: block.hash } : null;
    });
  }

  /** The followed events of blocks fromBlock..toBlock (inclusive): one eth_getLogs for both contracts. */
  async readRange(fromBlock: number, toBlock: number): Promise<RangeRead> {
    const logs = await this.call("eth_getLogs", () =>
      this.provider.getLogs({ ...this.decoder.filter, fromBlock, toBlock }),
    );
    const blocks = new Map<number, string>(logs.map((log) => [log.blockNumber, log.blockHash]));
    return {
      events: this.decoder.decode(logs),
      blocks: [...blocks].map(([number, hash]) => ({ number, hash })),
    };
  }

  /** The pool's state root as of block `blockTag`: 0, as for an empty tree, before the pool was deployed. */
  async stateRootAt(blockTag: number): Promise<bigint> {
    const code = await this.call("eth_getCode", () => this.provider.getCode(this.poolAddress, blockTag));
    if (code === "0x") return 0n;
    return this.call("PrivacyPool.currentRoot", () => this.contracts.pool.currentRoot({ blockTag }));
  }

  /** The entrypoint's newest ASP root at the head, 0 before the first update. */
  latestAspRoot(): Promise<bigint> {
    return this.call("Entrypoint.latestRoot", () => this.contracts.entrypoint.latestRoot());
  }

  /** Whether the entrypoint accepts `root` now (published, not revoked, recent). */
  isKnownAspRoot(root: bigint): Promise<boolean> {
    return this.call("Entrypoint.isKnownAspRoot", () => this.contracts.entrypoint.isKnownAspRoot(root));
  }

  private call<T>(what: string, call: () => Promise<T>): Promise<T> {
    return withRetry(what, call, this.retry, this.logger);
  }
}
