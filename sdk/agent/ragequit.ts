import type { Signer } from "ethers";
import type { Note } from "../note/note.js";
import { createLeanIMT, merkleWitness, statePathOf } from "../tree/merkle-witness.js";
import { PRIVACY_POOL_ABI } from "../contracts/abis.js";
import { connectContract } from "../contracts/typed-contract.js";
import { readStateLeaves, type PoolAddressBook, type ReadPoolLogsOptions } from "./pool-events.js";

export interface RagequitOptions extends ReadPoolLogsOptions {
  /** The note's original depositor (only it may ragequit), connected to a provider. */
  signer: Signer;
  addressBook: Pick<PoolAddressBook, "privacyPool" | "startBlock">;
  note: Note;
}

/**
 * Takes `note` back to its original depositor (PrivacyPool.ragequit): for a deposit the ASP excluded, so its funds
 * are never trapped. The pool keeps no index of leaves, so the note's path to the current state root is rebuilt
 * from the pool's LeafInserted events; the root stays accepted for 64 inserts or 128 blocks, time enough to send.
 * Refuses before sending a note that is no leaf of the pool; a caller that is not the depositor, or a spent note,
 * is refused by the pool's own check when the transaction is estimated (nothing is sent).
 */
export async function ragequitNote({ signer, addressBook, note, blockRange }: RagequitOptions): Promise<{ txHash: string }> {
  const provider = signer.provider;
  if (!provider) throw new Error("the signer must be connected to a provider");
  const tree = createLeanIMT(await readStateLeaves(provider, addressBook, { blockRange }));
  const index = tree.indexOf(note.commitment);
  if (index < 0) throw new Error(`the note's commitment ${note.commitment} is no leaf of the pool's state tree: check its value, label and secrets`);
  const path = statePathOf(merkleWitness(tree, index), tree.size);
  const pool = connectContract(PRIVACY_POOL_ABI, addressBook.privacyPool, signer);
  const receipt = await (await pool.ragequit(note.value, note.label, note.nullifier, note.secret, path)).wait();
  if (receipt === null || receipt.status !== 1) throw new Error("the ragequit transaction was not mined successfully");
  return { txHash: receipt.hash };
}
