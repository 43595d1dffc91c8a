import { JsonRpcProvider, type Provider } from "ethers";
import { ENTRYPOINT_ABI, PRIVACY_POOL_ABI } from "../contracts/abis.js";
import { connectContract } from "../contracts/typed-contract.js";
import { X402AgentError } from "./errors.js";

/**
 * The agent's own view of the pool (X402AgentOptions.ownRpc): an RPC the agent chooses, and the pool its notes are in.
 * With it, the agent proves only against roots at least as new as the chain shows it, so no facilitator or tree
 * server can learn which leaf is the agent's by serving it older trees one step at a time (docs/design.md 10).
 */
export interface OwnRpc {
  /** An Ethereum JSON-RPC URL the agent trusts (its own node, or a provider the operator does not run). */
  url: string;
  /** The PrivacyPool the agent's notes are in; a facilitator naming another pool is refused. */
  privacyPool: string;
  /**
   * How far behind the chain's head the agent reads, in blocks: the depth the facilitator's indexer waits for
   * before it serves a leaf. Default 0 on a local chain (31337), else 2, as the indexer's own default.
   */
  confirmations?: number;
}

/** The pool's newest roots at one block, as the agent's own RPC answered. */
export interface ChainRoots {
  block: number;
  state: { root: bigint; size: number };
  aspRoot: bigint;
}

/** A pair of trees a facilitator answered: served leaves, or a quote's roots. */
export interface AnsweredTrees {
  state: { root: string | bigint; size: number };
  asp: { root: string | bigint; size: number };
}

/** Where a payment's roots were checked: against the agent's own RPC at a block, or nowhere (the operator's word). */
export type RootsSource = { checkedAt: "own-rpc"; block: number } | { checkedAt: "unchecked" };

/** Reads the pool's newest roots through the agent's own RPC, and refuses trees older than those. */
export class ChainRootsReader {
  private readonly provider: Provider;
  private readonly pool;
  private entrypointAddress?: Promise<string>;
  private lag?: Promise<number>;

  constructor(private readonly own: OwnRpc) {
    this.provider = new JsonRpcProvider(own.url, undefined, { batchMaxCount: 1 });
    this.pool = connectContract(PRIVACY_POOL_ABI, own.privacyPool, this.provider);
  }

  get privacyPool(): string {
    return this.own.privacyPool;
  }

  /** The entrypoint the pool names: the only one a spend of its notes may go through. */
  entrypoint(): Promise<string> {
    this.entrypointAddress ??= this.pool.ENTRYPOINT().catch((error: unknown) => {
      this.entrypointAddress = undefined;
      throw this.unreadable(error);
    });
    return this.entrypointAddress;
  }

  /** The pool's state root and size and the entrypoint's latest ASP root, at the head less the confirmations. */
  async read(): Promise<ChainRoots> {
    try {
      const [head, lag] = await Promise.all([this.provider.getBlockNumber(), this.confirmations()]);
      const block = Math.max(0, head - lag);
      const at = { blockTag: block };
      const [root, size, aspRoot] = await Promise.all([this.pool.currentRoot(at), this.pool.currentTreeSize(at), this.latestAspRoot(at)]);
      return { block, state: { root, size: Number(size) }, aspRoot };
    } catch (error) {
      throw error instanceof X402AgentError ? error : this.unreadable(error);
    }
  }

  /**
   * Refuses `answered` (what the facilitator served or quoted) when either tree is older than `seen`: a state tree of
   * fewer leaves, or of as many under another root, or of more under a root the pool never had; an ASP root other than
   * the one seen, unless the entrypoint's latest root is now that root (published since).
   */
  async requireAtLeast(answered: AnsweredTrees, seen: ChainRoots, what: string): Promise<void> {
    const state = { root: BigInt(answered.state.root), size: answered.state.size };
    const aspRoot = BigInt(answered.asp.root);
    const stateOk =
      state.size === seen.state.size
        ? state.root === seen.state.root
        : state.size > seen.state.size && Number(await this.pool.stateTreeSizeAt(state.root).catch((error: unknown) => Promise.reject(this.unreadable(error)))) === state.size;
    const aspOk = aspRoot === seen.aspRoot || aspRoot === (await this.latestAspRoot().catch((error: unknown) => Promise.reject(this.unreadable(error))));
    if (stateOk && aspOk) return;
    throw new X402AgentError(
      "ROOTS_STALE",
      `The facilitator's ${what} is older than the pool's chain: it names a state tree of ${state.size} leaves (root ${state.root}) and ASP root ${aspRoot}; ` +
        `the agent's own RPC read ${seen.state.size} leaves (root ${seen.state.root}) and ASP root ${seen.aspRoot} at block ${seen.block}. ` +
        "Nothing was proven or spent. A facilitator that serves old roots can learn which leaf is the agent's: retry later, or pay through another facilitator.",
    );
  }

  /** The entrypoint's newest ASP root, at `at` (default the head). */
  private async latestAspRoot(at: { blockTag?: number } = {}): Promise<bigint> {
    return connectContract(ENTRYPOINT_ABI, await this.entrypoint(), this.provider).latestRoot(at);
  }

  /** How far behind the head the roots are read: the option, else 0 on a local chain (31337) and 2 elsewhere; the chain asked once. */
  private confirmations(): Promise<number> {
    const { confirmations } = this.own;
    if (confirmations !== undefined) return Promise.resolve(confirmations);
    this.lag ??= this.provider.getNetwork().then(
      (network) => (network.chainId === 31337n ? 0 : 2),
      (error: unknown) => {
        this.lag = undefined;
        throw error;
      },
    );
    return this.lag;
  }

  private unreadable(error: unknown): X402AgentError {
    const why = error instanceof Error ? error.message.split("\n")[0] : String(error);
    return new X402AgentError(
      "OWN_RPC_UNAVAILABLE",
      `The agent's own RPC (ownRpc) could not read the pool ${this.own.privacyPool}: ${why}. Nothing was proven or spent; retry once it answers.`,
    );
  }
}

/** The floor a quote's trees must reach: the trees the agent found its note in before it named the note. */
export function belowFloor(answered: AnsweredTrees, floor: AnsweredTrees): boolean {
  return answered.state.size < floor.state.size || answered.asp.size < floor.asp.size;
}
