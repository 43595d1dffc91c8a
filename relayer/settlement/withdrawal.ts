import {
  buildWithdrawInput,
  changeNoteOf,
  deriveChangeSecrets,
  encodeRelayData,
  toSolidityProof,
  withdrawalContext,
  type Note,
  type NoteSecrets,
} from "../../sdk/index.js";
import type { IndexerClient } from "../../indexer/client.js";
import type { PoolChain, RelayHooks } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";
import { feeOf } from "../pricing.js";
import { spendableNote } from "./note-status.js";
import type { Prover } from "./prover.js";

export interface WithdrawalOrder {
  note: Note;
  /** Gross amount leaving the pool; the recipient gets amount - fee. */
  amount: bigint;
  recipient: string;
  feeRecipient: string;
  feeBps: bigint;
  /** Change-note secrets; derived from the spent note when absent (docs/design.md 2). */
  changeSecrets?: NoteSecrets;
  /** Steps of the relay transaction the caller hooks into (the lease records them). */
  hooks?: RelayHooks;
}

export interface WithdrawalOutcome {
  txHash: string;
  nullifierHash: bigint;
  amount: bigint;
  fee: bigint;
  remainingValue: bigint;
  /** The change note, present when value remains. */
  nextDeposit?: Note;
  proofTimeMs: number;
}

/** Spends a note through Entrypoint.relay: check, prove, relay. The only code path that moves pool funds. */
export class PoolWithdrawer {
  constructor(
    private readonly indexer: IndexerClient,
    private readonly prover: Prover,
    private readonly chain: PoolChain,
  ) {}

  async withdraw(order: WithdrawalOrder): Promise<WithdrawalOutcome> {
    const { note, amount } = order;
    if (amount > note.value) {
      throw new RelayerError("INVALID_PAYMENT_AMOUNT", `The amount ${amount} exceeds the note's value ${note.value}.`);
    }
    const changeSecrets = order.changeSecrets ?? deriveChangeSecrets(note);
    if (changeSecrets.nullifier === note.nullifier) {
      throw new RelayerError("INVALID_REQUEST", "nextNullifier must differ from the spent note's nullifier.");
    }
    const spendable = await spendableNote(note, this.indexer, this.chain);

    const withdrawal = {
      processooor: this.chain.deployment.entrypoint,
      data: encodeRelayData({ recipient: order.recipient, feeRecipient: order.feeRecipient, relayFeeBPS: order.feeBps }),
    };
    const input = buildWithdrawInput({
      note,
      withdrawnValue: amount,
      changeSecrets,
      stateWitness: spendable.stateWitness,
      aspWitness: spendable.aspWitness,
      context: withdrawalContext(withdrawal, this.chain.deployment.scope),
    });
    const proof = await this.prover.prove(input);
    const receipt = await this.chain.relay(withdrawal, toSolidityProof(proof), order.hooks);

    const remainingValue = note.value - amount;
    return {
      txHash: receipt.hash,
      nullifierHash: spendable.nullifierHash,
      amount,
      fee: feeOf(amount, order.feeBps),
      remainingValue,
      ...(remainingValue > 0n ? { nextDeposit: changeNoteOf(note, amount, changeSecrets) } : {}),
      proofTimeMs: proof.proofTimeMs,
    };
  }
}
