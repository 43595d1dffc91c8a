import type { WithdrawProof } from "../../sdk/index.js";
import type { AccessFeeGate } from "./access-fee-gate.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";
import type { Facilitator, ProvenSpendResult } from "./facilitator.js";
import type { SignedQuote } from "../settlement/quote.js";

export interface AccessFeeRelayDeps {
  facilitator: Facilitator;
  accessFee: AccessFeeGate;
  chain: PoolChain;
}

/** quote-access-fee: the note that pays, by its nullifier hash, and the note the fee authorizes. */
export interface AccessFeeQuoteRequest {
  nullifierHash: bigint;
  authorizedNullifierHash: bigint;
  /** What leaves the note, all to the treasury: at least the fee and, in paid mode, its relay's gas; default the fee. */
  withdrawnValue?: bigint;
}

/** access-fee-proof: the agent's proof of an access-fee quote. */
export interface AccessFeeProvenRequest {
  quote: SignedQuote;
  proof: WithdrawProof;
  authorizedNullifierHash: bigint;
  /** As the quote was asked for. */
  withdrawnValue?: bigint;
}

export interface AccessFeeSettlement extends ProvenSpendResult {
  authorizedNullifierHash: bigint;
}

const NOTHING_SPENT = "Nothing was proven or spent.";

/**
 * An access fee paid out of a note (docs/relayer.md "Access fee"): the agent proves a withdrawal to the treasury with
 * no take of the required fee and, while a take is charged, the gas of its relay, whose AccessFeeData names the note
 * the fee authorizes (its change note), and the relayer relays it through Entrypoint.relayAccessFee, paying the gas,
 * under the spent note's lease as every spend. AccessFeePaid then names the pool as payer: no wallet of the agent appears with the nullifier hash.
 * The authorization is recorded from that receipt by the gate's own check (AccessFeeGate.authorize). The note that
 * pays needs no authorization: paying is what it is for.
 */
export class AccessFeeRelay {
  constructor(private readonly deps: AccessFeeRelayDeps) {}

  /**
   * What the agent's proof of the access fee must bind: `withdrawnValue` (at least the fee and the gas of its relay:
   * Facilitator.issueQuote refuses less) to the treasury, no take, the named note.
   */
  async quote({ nullifierHash, authorizedNullifierHash, withdrawnValue }: AccessFeeQuoteRequest): Promise<SignedQuote> {
    const { accessFee, chain, facilitator } = this.deps;
    this.assertPayable(nullifierHash, authorizedNullifierHash);
    const [authorized, spent] = await Promise.all([accessFee.isAuthorized(authorizedNullifierHash), chain.isNullifierSpent(authorizedNullifierHash)]);
    if (authorized || spent) {
      throw new RelayerError(
        "AUTHORIZATION_REJECTED",
        `The note of authorizedNullifierHash ${authorizedNullifierHash} is ${authorized ? "already authorized: spend it as it is" : "spent: an access fee would authorize nothing"}. ${NOTHING_SPENT}`,
      );
    }
    return facilitator.issueQuote({
      route: "access-fee",
      nullifierHash,
      recipient: accessFee.treasury,
      amount: withdrawnValue ?? accessFee.requiredFee,
      authorizedNullifierHash,
    });
  }

  /**
   * Relays the agent's proof of an access-fee quote once it proves exactly the fee, the treasury and the named note
   * (ProvenSpends.admit), then records the authorization of the named note from the relay's AccessFeePaid. A retry is
   * answered from the note's lease and records it again (a no-op once recorded).
   */
  async payProven({ quote, proof, authorizedNullifierHash, withdrawnValue }: AccessFeeProvenRequest): Promise<AccessFeeSettlement> {
    const { accessFee, chain, facilitator } = this.deps;
    this.assertPayable(quote.nullifierHash, authorizedNullifierHash);
    const result = await facilitator.spendProven(quote, proof, {
      route: "access-fee",
      amount: withdrawnValue ?? accessFee.requiredFee,
      recipient: accessFee.treasury,
      authorizedNullifierHash,
      terms: ["access-fee"],
    });
    await accessFee.authorize(chain.network, result.txHash, authorizedNullifierHash).catch((error: unknown) => {
      throw unrecorded(result.txHash, error);
    });
    return { ...result, authorizedNullifierHash };
  }

  private assertPayable(nullifierHash: bigint, authorizedNullifierHash: bigint): void {
    if (!this.deps.accessFee.enforced) {
      throw new RelayerError("AUTHORIZATION_REJECTED", `This facilitator does not enforce the access fee: spend the note as it is. ${NOTHING_SPENT}`);
    }
    if (nullifierHash === authorizedNullifierHash) {
      throw new RelayerError(
        "AUTHORIZATION_REJECTED",
        `An access fee paid out of a note cannot authorize that note, which the payment spends: name its change note's nullifier hash (deriveChangeSecrets). ${NOTHING_SPENT}`,
      );
    }
  }
}

/**
 * The fee was paid by `txHash` but its authorization could not be recorded now (the chain RPC or the database is
 * down): never "nothing was spent". A retry of the same request answers from the lease and records it.
 */
function unrecorded(txHash: string, error: unknown): unknown {
  if (!(error instanceof RelayerError) || error.status < 500) return error;
  return new RelayerError(
    error.code,
    `The access fee was paid by ${txHash}, but its authorization is not recorded yet (${error.code}). Retry the same request: it records it from that transaction.`,
    { fundingTxHash: txHash },
    error.status,
    error.retryAfterSeconds ?? 5,
  );
}
