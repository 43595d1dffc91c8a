import { hexlify, randomBytes, Wallet, type Signer } from "ethers";
import type { IndexerClient } from "../../../indexer/client.js";
import {
  buildWithdrawInput,
  changeNoteOf,
  createNote,
  deriveChangeSecrets,
  deriveRefundSecrets,
  encodeRelayData,
  nullifierHashOf,
  precommitmentOf,
  refundAnchorOf,
  proveWithdrawal,
  toSolidityProof,
  withdrawalContext,
  type Note,
  type PaymentTerms,
} from "../../../sdk/index.js";
import { buildAuthorization, signAuthorization } from "../../contracts/helpers/authorizations.js";
import { depositNote, ragequitNote, secretsFor } from "../../contracts/helpers/notes.js";
import type { LocalChain } from "./local-chain.js";

/**
 * A real deposit through the entrypoint; `tag` makes the note's secrets distinct and deterministic. `funded`: the
 * depositor already holds and approved `value` (one block, not three).
 */
export function deposit(chain: LocalChain, depositor: Signer, tag: number, value = 1_000_000n, options: { funded?: boolean } = {}): Promise<Note> {
  return depositNote(chain.facilitator, depositor, value, secretsFor(BigInt(tag)), options);
}

/** Who a relay pays when not the fixture's recipient: a single-use payer and the one payment it will make. */
interface Payer {
  recipient: string;
  payment: PaymentTerms;
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
  payer?: Payer,
): Promise<Note> {
  const { entrypoint, accounts, scope } = chain.facilitator;
  const relayData = { recipient: accounts.recipient.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n, ...payer };
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
    relayFeeBPS: relayData.relayFeeBPS,
    refundPrecommitment: precommitmentOf(deriveRefundSecrets(note)),
  });
  const proof = toSolidityProof(await proveWithdrawal(input));
  await (await entrypoint.relay(withdrawal, proof, scope, stateTreeSize)).wait();
  return changeNoteOf(note, withdrawnValue, changeSecrets);
}

/**
 * Relays `withdrawnValue` of `note` to a fresh single-use payer whose payment then expires unused, and returns the
 * payout into the pool through Entrypoint.depositRefund as the relaying party does (the deployer holds
 * REFUNDER_ROLE). Returns the change note and the refund note: the payout under `note`'s label, with its refund
 * secrets.
 */
export async function refundUnusedPayment(
  chain: LocalChain,
  indexer: IndexerClient,
  note: Note,
  withdrawnValue: bigint,
): Promise<{ change: Note; refund: Note }> {
  const { entrypoint, usdc } = chain.facilitator;
  const { time } = chain.connection.networkHelpers;
  const payer = Wallet.createRandom();
  const payment = { nonce: hexlify(randomBytes(32)), validBefore: BigInt((await time.latest()) + 60) };
  const change = await relayWithdrawal(chain, indexer, note, withdrawnValue, { recipient: payer.address, payment });
  // No relay fee: the payout is the withdrawn value.
  const refundSecrets = deriveRefundSecrets(note);
  const refund = createNote(withdrawnValue, note.label, refundSecrets, "refund");

  await time.increaseTo(payment.validBefore);
  const authorization = buildAuthorization(await time.latest(), {
    from: payer.address,
    to: await entrypoint.getAddress(),
    value: refund.value,
    nonce: hexlify(randomBytes(32)),
  });
  const signature = await signAuthorization(payer, usdc, "ReceiveWithAuthorization", authorization);
  const { validAfter, validBefore, nonce } = authorization;
  const record = { payer: payer.address, amount: refund.value, ...payment, refundAnchor: refundAnchorOf(note.label, precommitmentOf(refundSecrets)) };
  await (await entrypoint.depositRefund(usdc, nullifierHashOf(note.nullifier), record, { validAfter, validBefore, nonce, signature })).wait();
  return { change, refund };
}

/** The original depositor takes `note` back. */
export async function ragequit(chain: LocalChain, depositor: Signer, note: Note): Promise<void> {
  await (await ragequitNote(chain.facilitator.privacyPool, depositor, note)).wait();
}
