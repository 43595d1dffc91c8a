import {
  buildWithdrawInput,
  refundPrecommitmentOf,
  toSolidityProof,
  withdrawalContext,
  type Withdrawal,
  type WithdrawProof,
} from "../../sdk/index.js";
import type { IndexerClient } from "../../indexer/client.js";
import type { PoolChain, RelayHooks } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";
import { spendableNote } from "./note-status.js";
import type { Prover } from "./prover.js";
import { withdrawalOf, type NoteSpend, type RelayTerms, type Spend } from "./spend.js";

export interface WithdrawalOrder extends RelayTerms {
  spend: Spend;
  /** Gross amount leaving the pool; the recipient gets amount - fee. */
  amount: bigint;
  /** Steps of the relay transaction the caller hooks into (the lease records them). */
  hooks?: RelayHooks;
}

export interface WithdrawalOutcome {
  txHash: string;
  /** The relayer's proof time; null for a proof the agent made. */
  proofTimeMs: number | null;
}

/**
 * Spends a note through Entrypoint.relay (relayAccessFee for an access fee): check, prove (unless the agent did),
 * relay. The only code path that moves pool funds.
 */
export class PoolWithdrawer {
  constructor(
    private readonly indexer: IndexerClient,
    private readonly prover: Prover,
    private readonly chain: PoolChain,
  ) {}

  async withdraw(order: WithdrawalOrder): Promise<WithdrawalOutcome> {
    const withdrawal = withdrawalOf(this.chain.deployment, order);
    const proven =
      order.spend.kind === "note"
        ? await this.prove(order.spend, order.amount, order.feeBps, withdrawal)
        : { ...order.spend.proof, proofTimeMs: null, stateTreeSize: order.spend.stateTreeSize };
    const args = [withdrawal, toSolidityProof(proven), proven.stateTreeSize, order.hooks] as const;
    const receipt = order.authorizedNullifierHash === undefined ? await this.chain.relay(...args) : await this.chain.relayAccessFee(...args);
    return { txHash: receipt.hash, proofTimeMs: proven.proofTimeMs };
  }

  private async prove(
    { note, changeSecrets }: NoteSpend,
    amount: bigint,
    feeBps: bigint,
    withdrawal: Withdrawal,
  ): Promise<WithdrawProof & { proofTimeMs: number; stateTreeSize: bigint }> {
    if (amount > note.value) {
      throw new RelayerError("INVALID_PAYMENT_AMOUNT", `The amount ${amount} exceeds the note's value ${note.value}.`);
    }
    if (changeSecrets.nullifier === note.nullifier) {
      throw new RelayerError("INVALID_REQUEST", "nextNullifier must differ from the spent note's nullifier.");
    }
    const spendable = await spendableNote(note, this.indexer, this.chain);
    const input = buildWithdrawInput({
      note,
      withdrawnValue: amount,
      changeSecrets,
      stateWitness: spendable.stateWitness,
      aspWitness: spendable.aspWitness,
      context: withdrawalContext(withdrawal, this.chain.deployment.scope),
      relayFeeBPS: feeBps,
      // The agent's refund note, whether or not this withdrawal funds a payer (the signal must hide either way).
      refundPrecommitment: refundPrecommitmentOf(note),
    });
    return { ...(await this.prover.prove(input)), stateTreeSize: spendable.stateTreeSize };
  }
}
