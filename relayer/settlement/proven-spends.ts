import { feeOf } from "../../sdk/fees/relay-fee.js";
import { namePublicSignals, withdrawalContext, type WithdrawProof } from "../../sdk/index.js";
import type { IndexerClient } from "../../indexer/client.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";
import { indexerFailure } from "./note-status.js";
import type { Prover } from "./prover.js";
import type { QuoteRoute, QuoteSigner, SignedQuote } from "./quote.js";
import { withdrawalOf, type ProvenSpend, type RelayTerms } from "./spend.js";

/** The spend a quote is asked for, or a proof-carrying settle presents: as this relayer derives it from the request. */
export interface QuoteTerms extends RelayTerms {
  route: QuoteRoute;
  nullifierHash: bigint;
  withdrawnValue: bigint;
}

export interface ProvenSpendsDeps {
  chain: PoolChain;
  indexer: IndexerClient;
  prover: Pick<Prover, "verify">;
  signer: QuoteSigner;
  /** How long a quote is good for a new withdrawal. */
  ttlSeconds: number;
  clock?: () => number;
}

const NOTHING_SPENT = "Nothing was spent.";

/**
 * Non-custodial spends (docs/design.md 10): the quote an agent proves against, and the checks of the proof it brings
 * back. Everything the proof binds is derived again from the request and compared, so the relayer keeps no quote;
 * its MAC only vouches for the roots it named and its expiry.
 */
export class ProvenSpends {
  constructor(private readonly deps: ProvenSpendsDeps) {}

  /**
   * A quote of `terms` (with the pool's transfer, for settle-x402; with the tab's channel and lifetime, for open-tab)
   * against the indexer's state tree and the on-chain ASP tree of now.
   */
  async quote(terms: QuoteTerms): Promise<SignedQuote> {
    const { chain, indexer, signer } = this.deps;
    const { state, asp } = await indexer.trees().catch((error: unknown) => {
      throw indexerFailure(error);
    });
    const withdrawal = withdrawalOf(chain.deployment, terms);
    return signer.sign({
      route: terms.route,
      nullifierHash: terms.nullifierHash,
      processooor: withdrawal.processooor,
      scope: chain.deployment.scope,
      recipient: terms.recipient,
      feeRecipient: terms.feeRecipient,
      feeBps: terms.feeBps,
      ...(terms.authorizedNullifierHash !== undefined && { authorizedNullifierHash: terms.authorizedNullifierHash }),
      withdrawnValue: terms.withdrawnValue,
      fee: feeOf(terms.withdrawnValue, terms.feeBps),
      context: withdrawalContext(withdrawal, chain.deployment.scope),
      stateRoot: state.root,
      stateTreeDepth: state.depth,
      stateTreeSize: state.size,
      aspRoot: asp.root,
      aspTreeDepth: asp.depth,
      aspTreeSize: asp.size,
      expiresAt: Math.floor(this.now()) + this.deps.ttlSeconds,
      ...(terms.tab && { paymentNonce: terms.tab.channelId, paymentValidBefore: Number(terms.tab.reclaimableAfter) }),
      ...(terms.poolTransfer && {
        paymentNonce: terms.poolTransfer.nonce,
        paymentValidAfter: Number(terms.poolTransfer.validAfter),
        paymentValidBefore: Number(terms.poolTransfer.validBefore),
      }),
    });
  }

  /**
   * Before anything is reserved, on every request (a retry too): the quote is this relayer's and prices exactly
   * `terms`; the proof proves the quote's statement (nullifier hash, amount, context, roots and depths) and
   * verifies against the verification key. Expiry is not checked here: a retry of a settled spend replays.
   */
  async admit(quote: SignedQuote, proof: WithdrawProof, terms: QuoteTerms): Promise<ProvenSpend> {
    if (!this.deps.signer.isAuthentic(quote)) {
      throw new RelayerError("INVALID_REQUEST", `quote: not one this facilitator issued, or altered since. Ask for a new quote and prove against it. ${NOTHING_SPENT}`);
    }
    const { deployment } = this.deps.chain;
    // For open-tab the quote's payment nonce is the channel's id: a quote of another channel names another one, and so
    // another context. settle-x402's is the note's nullifier hash, and the seller's terms are in the pool's transfer
    // the context binds (the proof's context is compared below).
    const paymentNonce = terms.tab?.channelId ?? terms.poolTransfer?.nonce;
    const expected = { ...terms, processooor: deployment.entrypoint, scope: deployment.scope, paymentNonce };
    const fields = ["route", "nullifierHash", "recipient", "feeRecipient", "feeBps", "withdrawnValue", "processooor", "scope", "paymentNonce", "authorizedNullifierHash"] as const;
    for (const field of fields) {
      if (String(quote[field]).toLowerCase() !== String(expected[field]).toLowerCase()) {
        throw new RelayerError(
          "INVALID_REQUEST",
          `quote.${field} is ${quote[field]}, but this request pays with ${field} ${expected[field]}: the quote is for another payment ` +
            `(for paymentNonce: another seller, amount, asset or window). ` +
            `Ask for a quote of this one. ${NOTHING_SPENT}`,
        );
      }
    }
    const spend = this.statementOf(proof, quote);
    if (!(await this.deps.prover.verify(proof))) {
      throw new RelayerError("INVALID_PROOF", `The proof does not verify against the withdrawal circuit's verification key. ${NOTHING_SPENT}`);
    }
    return spend;
  }

  /**
   * When a new withdrawal would be made for `quote`: it has not expired. Whether the chain still takes the proof
   * (roots accepted, nullifier unspent) the relay's own simulation says, before anything is signed.
   */
  assertUnexpired(quote: SignedQuote): void {
    if (this.now() > quote.expiresAt) {
      throw new RelayerError(
        "QUOTE_EXPIRED",
        `The quote expired at ${new Date(quote.expiresAt * 1000).toISOString()} (quotes are good for ${this.deps.ttlSeconds} s). ` +
          `Ask for a new quote and prove against it. ${NOTHING_SPENT}`,
      );
    }
  }

  /** The proof as a spend, once its public signals are the quote's statement. */
  private statementOf(proof: WithdrawProof, quote: SignedQuote): ProvenSpend {
    let signals: ReturnType<typeof namePublicSignals>;
    try {
      signals = namePublicSignals(proof.publicSignals);
    } catch {
      throw new RelayerError("INVALID_PROOF", `proof.publicSignals are not the withdrawal circuit's. ${NOTHING_SPENT}`);
    }
    for (const signal of ["nullifierHash", "withdrawnValue", "context", "stateRoot", "stateTreeDepth", "aspRoot", "aspTreeDepth"] as const) {
      if (signals[signal] !== BigInt(quote[signal])) {
        throw new RelayerError(
          "INVALID_PROOF",
          `The proof's ${signal} is ${signals[signal]}, the quote's ${quote[signal]}: it proves another withdrawal than the one quoted ` +
            `(another recipient, fee, amount or note), or other roots. Prove against the quote as given. ${NOTHING_SPENT}`,
        );
      }
    }
    return { kind: "proof", proof, nullifierHash: signals.nullifierHash, newCommitment: signals.newCommitment, stateTreeSize: BigInt(quote.stateTreeSize) };
  }

  private now(): number {
    return (this.deps.clock ?? (() => Date.now() / 1000))();
  }
}
