import type { BytesLike, Provider } from "ethers";
import {
  changeNoteOf,
  createNote,
  deriveRefundSecrets,
  nullifierHashOf,
  precommitmentOf,
  type Note,
  type NoteSecrets,
} from "../note/note.js";
import {
  readPoolLogs,
  type DepositedRecord,
  type EventLocation,
  type PoolAddressBook,
  type PoolLogs,
  type ReadPoolLogsOptions,
} from "./pool-events.js";
import { depositSecretsOf, masterKeysOf, type MasterKeys } from "./seed.js";

/** Consecutive unused deposit indexes after which recovery stops looking, as HD wallets do. */
export const DEFAULT_GAP_LIMIT = 5;

/**
 * Where a note chain ends:
 * - `unspent`: its latest note holds value and is not spent;
 * - `empty`: fully withdrawn, the latest note is the zero-value change note;
 * - `ragequit`: the depositor took the latest note back;
 * - `mismatch`: the latest note was spent by a withdrawal whose change note is not the one derived from it (its
 *   secrets were supplied, not derived), so the chain cannot be followed from the seed.
 */
export type NoteChainStatus = "unspent" | "empty" | "ragequit" | "mismatch";

/** One event of a note chain. Holds no secret, so it can be shown or logged. */
export type NoteChainStep =
  | ({ kind: "deposited"; commitment: bigint; value: bigint } & EventLocation)
  | ({ kind: "withdrawn"; spentCommitment: bigint; withdrawnValue: bigint; newCommitment: bigint } & EventLocation)
  | ({ kind: "ragequit"; spentCommitment: bigint; value: bigint } & EventLocation);

/** A seed's deposit followed through its change notes. */
export interface NoteChain {
  /** The seed's deposit index; a refund chain carries the index of the deposit whose spend it refunds. */
  depositIndex: number;
  /**
   * `deposit`: the seed's own deposit. `refund`: what an expired settle-x402 payment left at its payer, deposited
   * back by the facilitator's sweep under the refund secrets of the note that paid (sdk deriveRefundSecrets).
   */
  origin: "deposit" | "refund";
  /** The newest note recovery could rebuild. */
  latest: Note;
  status: NoteChainStatus;
  history: NoteChainStep[];
}

export interface RecoveredNotes {
  /** The latest notes of the chains whose status is `unspent`: what the seed can still spend. */
  unspent: Note[];
  /** Every chain found, in deposit index order. */
  chains: NoteChain[];
  /** The chain was read up to this block. */
  toBlock: number;
}

export interface RecoverNotesOptions extends ReadPoolLogsOptions {
  provider: Provider;
  addressBook: PoolAddressBook;
  seed: BytesLike;
  /** Consecutive unused deposit indexes that end the walk. Default DEFAULT_GAP_LIMIT. */
  gapLimit?: number;
}

/**
 * Rebuilds a seed's notes from the chain alone: walks its deposit indexes from 0 until `gapLimit` consecutive
 * indexes have no Deposited event, and follows each deposit through the Withdrawn events of its successive
 * nullifier hashes, deriving every change note with deriveChangeSecrets as the SDK does before each spend.
 */
export async function recoverNotes(options: RecoverNotesOptions): Promise<RecoveredNotes> {
  const { provider, addressBook, seed, gapLimit = DEFAULT_GAP_LIMIT } = options;
  if (!Number.isSafeInteger(gapLimit) || gapLimit < 1) {
    throw new RangeError(`gapLimit must be a positive integer, got ${gapLimit}`);
  }
  const keys = masterKeysOf(seed);
  const logs = await readPoolLogs(provider, addressBook, options);
  const chains = rebuildNoteChains(logs, keys, addressBook.scope, gapLimit);
  return {
    unspent: chains.filter((chain) => chain.status === "unspent").map((chain) => chain.latest),
    chains,
    toBlock: logs.toBlock,
  };
}

/** The note chains of the seed of `keys` found in `logs`, refunds of their spends included. */
export function rebuildNoteChains(logs: PoolLogs, keys: MasterKeys, scope: bigint, gapLimit: number): NoteChain[] {
  const chains: NoteChain[] = [];
  const follow = (depositIndex: number, origin: NoteChain["origin"], deposit: DepositedRecord, secrets: NoteSecrets) => {
    chains.push(followChain(logs, depositIndex, origin, deposit, secrets, (spent) => {
      // A refund note keeps its origin's label; its commitment, made from the spend's refund anchor, confirms the secrets.
      const refund = logs.refundsByOrigin.get(nullifierHashOf(spent.nullifier));
      if (refund === undefined) return;
      const refundSecrets = deriveRefundSecrets(spent);
      const note = { ...refund, label: spent.label, precommitment: precommitmentOf(refundSecrets) };
      if (createNote(refund.value, spent.label, refundSecrets, "refund").commitment === refund.commitment) follow(depositIndex, "refund", note, refundSecrets);
    }));
  };
  for (let index = 0, gap = 0; gap < gapLimit; index += 1) {
    const secrets = depositSecretsOf(keys, scope, index);
    const deposit = logs.depositsByPrecommitment.get(precommitmentOf(secrets));
    if (deposit === undefined) {
      gap += 1;
      continue;
    }
    gap = 0;
    follow(index, "deposit", deposit, secrets);
  }
  return chains;
}

/** Follows one deposit through its change notes; `onWithdrawn` sees each note a withdrawal spent. */
function followChain(
  logs: PoolLogs,
  depositIndex: number,
  origin: NoteChain["origin"],
  deposit: DepositedRecord,
  secrets: NoteSecrets,
  onWithdrawn: (spent: Note) => void,
): NoteChain {
  const { commitment, value, blockNumber, txHash } = deposit;
  const followed = followNote(logs, createNote(value, deposit.label, secrets, origin === "refund" ? "refund" : "deposit"), onWithdrawn);
  return { depositIndex, origin, ...followed, history: [{ kind: "deposited", commitment, value, blockNumber, txHash }, ...followed.history] };
}

/** Where a note's spends led: the newest note rebuilt, why the walk stopped, and each spend on the way. */
export interface FollowedNote {
  latest: Note;
  status: NoteChainStatus;
  history: NoteChainStep[];
}

/**
 * Follows `note` through the Withdrawn events of its successive nullifier hashes, deriving each change note with
 * deriveChangeSecrets as the SDK does before each spend; `onWithdrawn` sees each note a withdrawal spent. Recovery
 * and NoteVault.reconcile (a note whose payment's outcome a crash lost) both walk this way.
 */
export function followNote(logs: PoolLogs, note: Note, onWithdrawn: (spent: Note) => void = () => {}): FollowedNote {
  const history: NoteChainStep[] = [];
  let latest = note;
  const end = (status: NoteChainStatus): FollowedNote => ({ latest, status, history });
  for (;;) {
    if (latest.value === 0n) return end("empty");
    const spend = logs.spendsByNullifierHash.get(nullifierHashOf(latest.nullifier));
    if (spend === undefined) return end("unspent");
    const { blockNumber, txHash } = spend;
    if (spend.kind === "ragequit") {
      history.push({ kind: "ragequit", spentCommitment: latest.commitment, value: spend.value, blockNumber, txHash });
      return end("ragequit");
    }
    const { withdrawnValue, newCommitment } = spend;
    const spentCommitment = latest.commitment;
    history.push({ kind: "withdrawn", spentCommitment, withdrawnValue, newCommitment, blockNumber, txHash });
    onWithdrawn(latest);
    // A valid proof keeps 0 < withdrawnValue <= value; the commitment check below catches any other event.
    const withinValue = withdrawnValue > 0n && withdrawnValue <= latest.value;
    const change = withinValue ? changeNoteOf(latest, withdrawnValue) : undefined;
    if (change?.commitment !== newCommitment) return end("mismatch");
    latest = change;
  }
}
