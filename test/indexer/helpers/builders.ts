import { getAddress, zeroPadValue, toBeHex } from "ethers";
import { hash1 } from "../../../sdk/index.js";
import type {
  AspDecision,
  BlockRef,
  DepositRecord,
  LeafRecord,
  SpentNullifierRecord,
  SyncBatch,
} from "../../../indexer/store/indexer-store.js";

/** Deterministic distinct values for test records. */
export const fieldOf = (tag: number) => hash1(BigInt(tag));
export const addressOf = (tag: number) => getAddress(zeroPadValue(toBeHex(0x1000 + tag), 20));
export const blockHashOf = (number: number, fork = 0) => zeroPadValue(toBeHex(number * 1000 + fork + 1), 32);
export const txHashOf = (tag: number) => zeroPadValue(toBeHex(0xabc000 + tag), 32);

export const buildBlock = (number: number, fork = 0): BlockRef => ({ number, hash: blockHashOf(number, fork) });

export function buildLeaf(overrides: Partial<LeafRecord> & { leafIndex: number }): LeafRecord {
  return {
    commitment: fieldOf(100 + overrides.leafIndex),
    blockNumber: 10,
    txHash: txHashOf(overrides.leafIndex),
    logIndex: 0,
    ...overrides,
  };
}

export function buildDeposit(overrides: Partial<DepositRecord> & { label: bigint }): DepositRecord {
  return {
    depositor: addressOf(1),
    commitment: fieldOf(200),
    value: 1_000_000n,
    precommitment: fieldOf(300),
    blockNumber: 10,
    txHash: txHashOf(1),
    logIndex: 1,
    ...overrides,
  };
}

export function buildSpend(overrides: Partial<SpentNullifierRecord> = {}): SpentNullifierRecord {
  return {
    nullifierHash: fieldOf(400),
    kind: "withdrawal",
    label: null,
    blockNumber: 10,
    txHash: txHashOf(2),
    logIndex: 2,
    ...overrides,
  };
}

export function buildDecision(overrides: Partial<AspDecision> & { label: bigint }): AspDecision {
  return {
    depositor: addressOf(1),
    approved: true,
    list: null,
    reason: "depositor is on no screening list",
    listsDigest: "ab".repeat(32),
    decidedAt: "2025-01-01T00:00:00.000Z",
    ...overrides,
  };
}

export function buildBatch(overrides: Partial<SyncBatch> & { cursor: BlockRef }): SyncBatch {
  return {
    blocks: [overrides.cursor],
    leaves: [],
    deposits: [],
    spentNullifiers: [],
    aspRoots: [],
    aspDecisions: [],
    ...overrides,
  };
}
