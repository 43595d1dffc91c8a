import { toBeHex, Wallet, type Signer } from "ethers";
import type { IndexerClient } from "../../../indexer/client.js";
import {
  buildWithdrawInput,
  changeNoteOf,
  createNote,
  deriveChangeSecrets,
  deriveRefundSecrets,
  encodePoolAuthorization,
  encodeRelayData,
  nullifierHashOf,
  precommitmentOf,
  refundAnchorOf,
  proveWithdrawal,
  toSolidityProof,
  withdrawalContext,
  type Note,
} from "../../../sdk/index.js";
import { depositNote, ragequitNote, secretsFor } from "../../contracts/helpers/notes.js";
import type { LocalChain } from "./local-chain.js";

/**
 * A real deposit through the entrypoint; `tag` makes the note's secrets distinct and deterministic. `funded`: the
 * depositor already holds and approved `value` (one block, not three).
 */
export function deposit(chain: LocalChain, depositor: Signer, tag: number, value = 1_000_000n, options: { funded?: boolean } = {}): Promise<Note> {
  return depositNote(chain.facilitator, depositor, value, secretsFor(BigInt(tag)), options);
}

/**
 * Withdraws part of `note` through Entrypoint.relay as the relayer will, with no relay fee: both Merkle paths come
 * from the indexer API, the proof is a real Groth16 proof. Returns the change note.
 */
export async function relayWithdrawal(
  chain: LocalChain,
  indexer: IndexerClient,
  note: Note,
  withdrawnValue: bigint,
  /** The withdrawal's data, when not a RelayData to the fixture's recipient; its relay fee is 0. */
  data?: string,
): Promise<Note> {
  const { entrypoint, accounts, scope } = chain.facilitator;
  const relayData = { recipient: accounts.recipient.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n };
  const withdrawal = { processooor: await entrypoint.getAddress(), data: data ?? encodeRelayData(relayData) };
  const changeSecrets = deriveChangeSecrets(note);
  const { witness: stateWitness, stateTreeSize } = await indexer.stateProof(note.commitment);
  const input = buildWithdrawInput({
    note,
    withdrawnValue,
    changeSecrets,
    stateWitness,
    aspWitness: (await indexer.aspProof(note.label)).witness,
    context: withdrawalContext(withdrawal, scope),
    relayFeeBPS: relayData.relayFeeBPS,
    refundPrecommitment: precommitmentOf(deriveRefundSecrets(note)),
  });
  const proof = toSolidityProof(await proveWithdrawal(input));
  await (await entrypoint.relay(withdrawal, proof, scope, stateTreeSize)).wait();
  return changeNoteOf(note, withdrawnValue, changeSecrets);
}

/**
 * Relays `withdrawnValue` of `note` as the pool's authorization of a seller's transfer that expires unused, and returns
 * it into the pool through Entrypoint.refundAuthorization as anyone may. Returns the change note and the refund note:
 * the payout under `note`'s label, with its refund secrets.
 */
export async function refundUnusedPayment(
  chain: LocalChain,
  indexer: IndexerClient,
  note: Note,
  withdrawnValue: bigint,
): Promise<{ change: Note; refund: Note }> {
  const { entrypoint, usdc, accounts } = chain.facilitator;
  const { time } = chain.connection.networkHelpers;
  const originNullifierHash = nullifierHashOf(note.nullifier);
  const transfer = { payTo: Wallet.createRandom().address, value: withdrawnValue, validAfter: 0n, validBefore: BigInt((await time.latest()) + 60) };
  const data = encodePoolAuthorization({ ...transfer, nonce: toBeHex(originNullifierHash, 32), feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n });
  const change = await relayWithdrawal(chain, indexer, note, withdrawnValue, data);

  // No relay fee: the payout is the withdrawn value.
  const refundSecrets = deriveRefundSecrets(note);
  const refund = createNote(withdrawnValue, note.label, refundSecrets, "refund");
  await time.increaseTo(transfer.validBefore);
  await (await entrypoint.refundAuthorization(usdc, originNullifierHash, transfer, refundAnchorOf(note.label, precommitmentOf(refundSecrets)))).wait();
  return { change, refund };
}

/** The original depositor takes `note` back. */
export async function ragequit(chain: LocalChain, depositor: Signer, note: Note): Promise<void> {
  await (await ragequitNote(chain.facilitator.privacyPool, depositor, note)).wait();
}
