import type { Signer } from "ethers";
import type { IndexerClient } from "../../../indexer/client.js";
import {
  buildWithdrawInput,
  changeNoteOf,
  deriveChangeSecrets,
  encodeRelayData,
  proveWithdrawal,
  toSolidityProof,
  withdrawalContext,
  type Note,
} from "../../../sdk/index.js";
import { depositNote, ragequitNote, secretsFor } from "../../contracts/helpers/notes.js";
import type { LocalChain } from "./local-chain.js";

/** A real deposit through the entrypoint; `tag` makes the note's secrets distinct and deterministic. */
export function deposit(chain: LocalChain, depositor: Signer, tag: number, value = 1_000_000n): Promise<Note> {
  return depositNote(chain.facilitator, depositor, value, secretsFor(BigInt(tag)));
}

/**
 * Withdraws part of `note` through Entrypoint.relay as the relayer will: both Merkle paths come from the indexer
 * API, the proof is a real Groth16 proof. Returns the change note.
 */
export async function relayWithdrawal(
  chain: LocalChain,
  indexer: IndexerClient,
  note: Note,
  withdrawnValue: bigint,
): Promise<Note> {
  const { entrypoint, accounts, scope } = chain.facilitator;
  const relayData = { recipient: accounts.recipient.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n };
  const withdrawal = { processooor: await entrypoint.getAddress(), data: encodeRelayData(relayData) };
  const changeSecrets = deriveChangeSecrets(note);
  const { witness: stateWitness, stateTreeSize } = await indexer.stateProof(note.commitment);
  const input = buildWithdrawInput({
    note,
    withdrawnValue,
    changeSecrets,
    stateWitness,
    aspWitness: (await indexer.aspProof(note.label)).witness,
    context: withdrawalContext(withdrawal, scope),
  });
  const proof = toSolidityProof(await proveWithdrawal(input));
  await (await entrypoint.relay(withdrawal, proof, scope, stateTreeSize)).wait();
  return changeNoteOf(note, withdrawnValue, changeSecrets);
}

/** The original depositor takes `note` back. */
export async function ragequit(chain: LocalChain, depositor: Signer, note: Note): Promise<void> {
  await (await ragequitNote(chain.facilitator.privacyPool, depositor, note)).wait();
}
