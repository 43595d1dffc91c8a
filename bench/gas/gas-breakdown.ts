import type { NetworkConnection } from "hardhat/types/network";

/** The parts a transaction's gas is split into, in the order the bench prints them. */
export const PARTS = [
  "base",
  "verifier",
  "transfers",
  "poseidon",
  "treeStorage",
  "rootHistory",
  "otherStorage",
  "events",
  "otherExecution",
  "refund",
] as const;
export type Part = (typeof PARTS)[number];
export type Breakdown = Record<Part, number>;

export const PART_NAMES: Record<Part, string> = {
  base: "21k base + calldata",
  verifier: "Groth16 verifier call",
  transfers: "token transfers",
  poseidon: "Poseidon (linked calls and inlined code)",
  treeStorage: "tree storage (size, depth, side nodes)",
  rootHistory: "root history storage (state root ring, ASP roots)",
  otherStorage: "other storage (nullifier, accrued fee, nonce, depositor, guard, config)",
  events: "events",
  otherExecution: "other execution (checks, decoding, calls between contracts)",
  refund: "storage refund",
};

/** Who a call or a storage slot belongs to. Addresses and slots are lower-case 0x-hex, slots 32 bytes. */
export interface Classifier {
  /** Callees whose whole frame (the CALL included) is one part. */
  callees: Map<string, Part>;
  /** Storage slots of `contract` (any contract when the key is "*") whose SLOAD/SSTORE is one part. */
  slots: Map<string, Part>;
  /** Per contract (lower-case address), the program counters of each inlined library that is one part. */
  inlined: Map<string, { pcs: Set<number>; part: Part }[]>;
}

interface StructLog {
  op: string;
  pc: number;
  gas: number;
  gasCost: number;
  depth: number;
  stack?: string[];
}

const CALLS = new Set(["CALL", "STATICCALL", "DELEGATECALL", "CALLCODE"]);
const word = (hex: string) => `0x${BigInt(hex).toString(16).padStart(64, "0")}`;
const address = (hex: string) => `0x${BigInt(hex).toString(16).padStart(40, "0")}`;

export const slotKey = (contract: string, slot: string) => `${contract.toLowerCase()}:${word(slot)}`;

/**
 * The gas of mined transaction `hash` split into parts, from the node's opcode trace: a call to a classified callee
 * counts whole (what the caller had before the CALL minus what it has after it returns), SLOAD and SSTORE count by
 * slot, LOGs as events, the steps of classified inlined code by program counter; the rest of execution is "other", the intrinsic gas is "base" and the refund is negative.
 * The parts add up to the receipt's gasUsed.
 */
export async function gasBreakdown(connection: NetworkConnection, hash: string, classifier: Classifier): Promise<Breakdown> {
  const provider = connection.ethers.provider;
  const [tx, receipt] = await Promise.all([provider.getTransaction(hash), provider.getTransactionReceipt(hash)]);
  if (!tx || !receipt) throw new Error(`transaction ${hash} is not mined`);
  const trace = (await provider.send("debug_traceTransaction", [
    hash,
    { disableStack: false, disableMemory: true, disableStorage: true },
  ])) as { structLogs: StructLog[] };
  const logs = trace.structLogs;
  const parts = Object.fromEntries(PARTS.map((part) => [part, 0])) as Breakdown;
  parts.base = Number(tx.gasLimit) - logs[0]!.gas;
  const contracts = [tx.to!.toLowerCase()];

  for (let i = 0; i < logs.length; i++) {
    const log = logs[i]!;
    const stack = log.stack ?? [];
    const contract = contracts[log.depth - 1]!;
    if (CALLS.has(log.op)) {
      const callee = address(stack[stack.length - 2]!);
      const part = classifier.callees.get(callee);
      if (part) {
        parts[part] += callGas(logs, i);
        i = returnIndex(logs, i) - 1;
        continue;
      }
      // Descend: the callee's steps are counted one by one, the CALL's own overhead is what they leave over.
      contracts[log.depth] = log.op === "DELEGATECALL" || log.op === "CALLCODE" ? contract : callee;
      parts.otherExecution += callGas(logs, i) - frameGas(logs, i + 1, log.depth + 1);
      continue;
    }
    if (log.op === "SLOAD" || log.op === "SSTORE") {
      const slot = stack[stack.length - 1]!;
      const part = classifier.slots.get(slotKey(contract, slot)) ?? classifier.slots.get(slotKey("*", slot));
      parts[part ?? "otherStorage"] += log.gasCost;
    } else if (log.op.startsWith("LOG")) {
      parts.events += log.gasCost;
    } else {
      const inlined = classifier.inlined.get(contract)?.find(({ pcs }) => pcs.has(log.pc));
      parts[inlined?.part ?? "otherExecution"] += log.gasCost;
    }
  }
  parts.refund = Number(receipt.gasUsed) - PARTS.reduce((sum, part) => sum + parts[part], 0);
  return parts;
}

/** The index of the caller's first step after the call at `i` returns (logs.length when none follows). */
function returnIndex(logs: StructLog[], i: number): number {
  const depth = logs[i]!.depth;
  let j = i + 1;
  while (j < logs.length && logs[j]!.depth > depth) j++;
  return j;
}

/** What the call at `i` cost its caller, its own overhead and everything the callee spent. */
function callGas(logs: StructLog[], i: number): number {
  const after = logs[returnIndex(logs, i)];
  return after === undefined ? logs[i]!.gasCost : logs[i]!.gas - after.gas;
}

/** The gas of the steps of the frame at `depth` that starts at `from`, each call in it counted whole. */
function frameGas(logs: StructLog[], from: number, depth: number): number {
  let total = 0;
  for (let i = from; i < logs.length && logs[i]!.depth >= depth; i++) {
    if (logs[i]!.depth === depth) total += CALLS.has(logs[i]!.op) ? callGas(logs, i) : logs[i]!.gasCost;
  }
  return total;
}
