import { setTimeout as sleep } from "node:timers/promises";
import { createNote, nullifierHashOf, type MerkleWitness, type Note } from "../../sdk/index.js";
import { IndexerApiError, type IndexerClient } from "../../indexer/client.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";

/** How long a lookup of a missing commitment waits for a lagging indexer to reach the chain head. */
const INDEXER_CATCH_UP_MS = 10_000;
const INDEXER_CATCH_UP_POLL_MS = 200;

/** What a spendable note has: its nullifier hash and its paths in the state tree and the ASP tree. */
export interface SpendableNote {
  nullifierHash: bigint;
  stateWitness: MerkleWitness;
  /** The size of the state tree stateWitness was taken from: the relay names it. */
  stateTreeSize: bigint;
  aspWitness: MerkleWitness;
}

/** The indexer's answers as the facilitator's error classes (docs/api.md section 7). */
export function indexerFailure(error: unknown): RelayerError {
  if (error instanceof RelayerError) return error;
  if (error instanceof IndexerApiError) {
    switch (error.code) {
      case "DEPOSIT_NOT_FOUND":
        return new RelayerError("DEPOSIT_NOT_FOUND", "The pool's state tree does not contain this commitment. Check the note fields, or wait for the indexer to see the deposit.");
      case "INDEXER_COLD":
        return new RelayerError("INDEXER_COLD", "The indexer is cold: its state tree is not synced yet, so no withdrawal can be proven. Run an indexer sync and retry.");
      case "LABEL_NOT_APPROVED":
        return new RelayerError("INVALID_PROOF", "The note's label is not in the association set: the ASP excluded the deposit. Its depositor can ragequit.");
      case "ASP_ROOT_NOT_PUBLISHED":
        return new RelayerError("INVALID_PROOF", "The note's label is approved but the ASP root holding it is not on chain yet. Retry shortly.");
    }
  }
  const unavailable = new RelayerError("INDEXER_UNAVAILABLE", "The indexer is unavailable; nothing was spent. Retry later.");
  unavailable.cause = error; // logged by the error handler, never sent
  return unavailable;
}

/** Rejects a note whose fields do not hash to its commitment: it cannot be proven, whatever the tree holds. */
export function assertNoteConsistent(note: Note): void {
  if (createNote(note.value, note.label, note, note.form).commitment !== note.commitment) {
    throw new RelayerError("INVALID_PROOF", "Malformed note: value, label, nullifier and secret do not hash to the commitment.");
  }
}

/**
 * Checks with the indexer that `note` can be spent now and fetches its witnesses. Nothing here spends: it is
 * what verify runs, and what settle runs before proving.
 *
 * A commitment the indexer does not know yet may be one the chain just inserted (the change note of the
 * settlement a moment ago): while the indexer is behind the chain head, the lookup waits for it and asks again.
 */
export async function spendableNote(note: Note, indexer: IndexerClient, chain: PoolChain): Promise<SpendableNote> {
  assertNoteConsistent(note);
  const lookUpAfterCatchUp = async (error: unknown) => {
    if (isMissingCommitment(error) && (await indexerCaughtUpWith(chain, indexer))) return lookUpNote(note, indexer);
    throw error;
  };
  return lookUpNote(note, indexer)
    .catch(lookUpAfterCatchUp)
    .catch((error: unknown) => {
      throw indexerFailure(error);
    });
}

async function lookUpNote(note: Note, indexer: IndexerClient): Promise<SpendableNote> {
  const nullifierHash = nullifierHashOf(note.nullifier);
  const [nullifier, state, asp] = await Promise.all([
    indexer.nullifier(nullifierHash),
    indexer.stateProof(note.commitment),
    indexer.aspProof(note.label),
  ]);
  if (nullifier.spent) {
    throw new RelayerError("ALREADY_SPENT", "The note is already spent. Use nextDeposit from the settlement that spent it.");
  }
  return { nullifierHash, stateWitness: state.witness, stateTreeSize: BigInt(state.stateTreeSize), aspWitness: asp.witness };
}

function isMissingCommitment(error: unknown): boolean {
  return error instanceof IndexerApiError && error.code === "DEPOSIT_NOT_FOUND";
}

/**
 * Waits until the indexer has read every block it will read at the chain head of now (the head less its
 * confirmations). True when it was behind and caught up (a second lookup may find what the first missed);
 * false when it already was there, or did not get there in time.
 */
async function indexerCaughtUpWith(chain: PoolChain, indexer: IndexerClient): Promise<boolean> {
  const head = await chain.call(() => chain.provider.getBlockNumber());
  const deadline = Date.now() + INDEXER_CATCH_UP_MS;
  let behind = false;
  for (;;) {
    const { lastBlock, confirmations } = await indexer.status();
    if (lastBlock !== null && lastBlock >= head - confirmations) return behind;
    behind = true;
    if (Date.now() >= deadline) return false;
    await sleep(INDEXER_CATCH_UP_POLL_MS);
  }
}
