import { getAddress, type Provider, type TransactionReceipt } from "ethers";
import { ENTRYPOINT_ABI, PRIVACY_POOL_ABI } from "../contracts/abis.js";
import { decodeEvent, eventTopic } from "../contracts/typed-contract.js";

/** The parts of a chain's address book (the deployment's `deployments/<chainId>.json`) the agent SDK uses. */
export interface PoolAddressBook {
  entrypoint: string;
  privacyPool: string;
  usdc: string;
  /** The pool's SCOPE. */
  scope: bigint;
  /** A block at or before the deployment: the pool's events are read from here. */
  startBlock: number;
}

/** Where an event was emitted. */
export interface EventLocation {
  blockNumber: number;
  txHash: string;
}

export interface DepositedRecord extends EventLocation {
  commitment: bigint;
  label: bigint;
  value: bigint;
  precommitment: bigint;
}

/** How a note left the pool: a withdrawal proof (leaving a change note) or its depositor's ragequit. */
export type SpendRecord =
  | ({ kind: "withdrawn"; withdrawnValue: bigint; newCommitment: bigint } & EventLocation)
  | ({ kind: "ragequit"; value: bigint } & EventLocation);

/** An unused payment that came back into the pool (Entrypoint.RefundDeposited): a note under its origin's label. */
export interface RefundRecord extends EventLocation {
  commitment: bigint;
  value: bigint;
}

/** The pool's deposits, spends and refunds up to `toBlock`, keyed as the seed's notes are looked up. */
export interface PoolLogs {
  depositsByPrecommitment: Map<bigint, DepositedRecord>;
  spendsByNullifierHash: Map<bigint, SpendRecord>;
  /** By the nullifier hash of the note whose spend funded the refunded payment. */
  refundsByOrigin: Map<bigint, RefundRecord>;
  toBlock: number;
}

export interface ReadPoolLogsOptions {
  /** Blocks per eth_getLogs call; public RPCs cap the range. Default DEFAULT_BLOCK_RANGE. */
  blockRange?: number;
}

export const DEFAULT_BLOCK_RANGE = 5_000;

const DEPOSITED = eventTopic(PRIVACY_POOL_ABI, "Deposited");
const WITHDRAWN = eventTopic(PRIVACY_POOL_ABI, "Withdrawn");
const RAGEQUIT = eventTopic(PRIVACY_POOL_ABI, "Ragequit");
const LEAF_INSERTED = eventTopic(PRIVACY_POOL_ABI, "LeafInserted");
const REFUND_DEPOSITED = eventTopic(ENTRYPOINT_ABI, "RefundDeposited");

/** The pool's Deposited event in the receipt of a deposit transaction. */
export function depositedIn(receipt: TransactionReceipt, book: Pick<PoolAddressBook, "privacyPool">): DepositedRecord {
  const poolAddress = getAddress(book.privacyPool);
  const log = receipt.logs.find(({ address, topics }) => getAddress(address) === poolAddress && topics[0] === DEPOSITED);
  if (log === undefined) throw new Error(`transaction ${receipt.hash} emitted no Deposited event of the pool`);
  const { commitment, label, value, precommitment } = decodeEvent(PRIVACY_POOL_ABI, "Deposited", log);
  return { commitment, label, value, precommitment, blockNumber: receipt.blockNumber, txHash: receipt.hash };
}

/**
 * Reads every Deposited, Withdrawn and Ragequit event of the pool and every RefundDeposited of the entrypoint from
 * the address book's start block to the current head, in ranges of `blockRange` blocks. Neither the precommitment nor the spent nullifier hash is an
 * indexed topic, so the seed's notes cannot be filtered for on the node: the whole history is read once.
 */
export async function readPoolLogs(
  provider: Provider,
  book: PoolAddressBook,
  { blockRange = DEFAULT_BLOCK_RANGE }: ReadPoolLogsOptions = {},
): Promise<PoolLogs> {
  if (!Number.isSafeInteger(blockRange) || blockRange < 1) {
    throw new RangeError(`blockRange must be a positive integer, got ${blockRange}`);
  }
  const topics = [[DEPOSITED, WITHDRAWN, RAGEQUIT, REFUND_DEPOSITED]];
  const addresses = [book.privacyPool, book.entrypoint];

  const toBlock = await provider.getBlockNumber();
  const logs: PoolLogs = { depositsByPrecommitment: new Map(), spendsByNullifierHash: new Map(), refundsByOrigin: new Map(), toBlock };
  for (let fromBlock = book.startBlock; fromBlock <= toBlock; fromBlock += blockRange) {
    const range = { fromBlock, toBlock: Math.min(fromBlock + blockRange - 1, toBlock) };
    for (const log of await provider.getLogs({ address: addresses, topics, ...range })) {
      const at = { blockNumber: log.blockNumber, txHash: log.transactionHash };
      // Each topic is emitted by one of the two contracts only.
      switch (log.topics[0]) {
        case REFUND_DEPOSITED: {
          const { commitment, originNullifierHash, value } = decodeEvent(ENTRYPOINT_ABI, "RefundDeposited", log);
          logs.refundsByOrigin.set(originNullifierHash, { commitment, value, ...at });
          break;
        }
        case DEPOSITED: {
          const { commitment, label, value, precommitment } = decodeEvent(PRIVACY_POOL_ABI, "Deposited", log);
          // A reused precommitment makes a second note with the same nullifier; only the first is followed.
          if (!logs.depositsByPrecommitment.has(precommitment)) {
            logs.depositsByPrecommitment.set(precommitment, { commitment, label, value, precommitment, ...at });
          }
          break;
        }
        case WITHDRAWN: {
          const { withdrawnValue, spentNullifierHash, newCommitment } = decodeEvent(PRIVACY_POOL_ABI, "Withdrawn", log);
          const spend = { kind: "withdrawn" as const, withdrawnValue, newCommitment, ...at };
          logs.spendsByNullifierHash.set(spentNullifierHash, spend);
          break;
        }
        case RAGEQUIT: {
          const { value, spentNullifierHash } = decodeEvent(PRIVACY_POOL_ABI, "Ragequit", log);
          logs.spendsByNullifierHash.set(spentNullifierHash, { kind: "ragequit", value, ...at });
          break;
        }
      }
    }
  }
  return logs;
}

/**
 * The pool's state tree leaves in leaf order, from its LeafInserted events between the address book's start block
 * and the current head (in ranges of `blockRange` blocks): what a path to the current root is taken from.
 */
export async function readStateLeaves(
  provider: Provider,
  book: Pick<PoolAddressBook, "privacyPool" | "startBlock">,
  { blockRange = DEFAULT_BLOCK_RANGE }: ReadPoolLogsOptions = {},
): Promise<bigint[]> {
  if (!Number.isSafeInteger(blockRange) || blockRange < 1) {
    throw new RangeError(`blockRange must be a positive integer, got ${blockRange}`);
  }
  const leaves: bigint[] = [];
  const toBlock = await provider.getBlockNumber();
  for (let fromBlock = book.startBlock; fromBlock <= toBlock; fromBlock += blockRange) {
    const range = { fromBlock, toBlock: Math.min(fromBlock + blockRange - 1, toBlock) };
    for (const log of await provider.getLogs({ address: book.privacyPool, topics: [LEAF_INSERTED], ...range })) {
      const { leafIndex, leaf } = decodeEvent(PRIVACY_POOL_ABI, "LeafInserted", log);
      leaves[Number(leafIndex)] = leaf;
    }
  }
  // A sparse array: filter() skips the holes an event missing from the range left.
  if (leaves.filter(() => true).length !== leaves.length) {
    throw new Error("the pool's LeafInserted events leave gaps in the state tree: is startBlock the pool's deployment block?");
  }
  return leaves;
}
