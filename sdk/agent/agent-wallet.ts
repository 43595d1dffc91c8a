import { setTimeout as sleep } from "node:timers/promises";
import { FacilitatorError, noteFromWire, noteToWire, type SettleAnswer, type SettleX402Answer, type SupportedAnswer, type WireNote } from "../client/facilitator-client.js";
import { deriveChangeSecrets, type Note } from "../note/note.js";
import { sharedProver, type ProofEngine } from "../prover/local-prover.js";
import { accessFeeAskedBy, payAccessFee } from "./access-fee-payment.js";
import { DEFAULT_MAX_PAYMENT_ATOMIC, type AgentEvent, type PaymentPrivacy, type SettlementAnswer, type X402AgentOptions } from "./agent-options.js";
import { ChainRootsReader } from "./chain-roots.js";
import { X402AgentError } from "./errors.js";
import { proveLocally, type QuoteExpectation } from "./local-proof.js";
import { proofsRelayedThrough } from "./relayed-proofs.js";
import type { NoteReservation, SendingHold } from "./note-reservation.js";
import type { AgentPool } from "./shielded-proof.js";
import { emptyTrees, loadTrees, saveTrees, type AgentTrees } from "./tree-file.js";

/** What the agent reads of the facilitator once: its take and whether it relays the agent's own proofs. */
export interface FacilitatorTerms {
  takeBps: bigint;
  /** The entrypoint a quote's withdrawal must name, when the agent proves its spends itself; undefined in custodial mode. */
  provenThrough?: string;
  /** What the facilitator offers: an access fee is proven by the agent whatever the custody (proofsRelayedThrough). */
  supported: SupportedAnswer;
}

/**
 * One settlement request, built once so that every retry sends it identical (the facilitator answers a retry from
 * the note's lease), and how to read the change note off its answer.
 */
export interface PreparedSettlement<T> {
  send: () => Promise<T>;
  changeNote: (answer: SettlementAnswer) => Note | undefined;
  /** The request kept with the note while it is sent, to send again after a crash (NoteStore.resume). */
  hold?: SendingHold;
}

/** Seconds to wait before retrying a settlement whose answer was lost (no Retry-After to go by). */
const LOST_ANSWER_RETRY_SECONDS = 2;

/**
 * What every way to pay of one agent shares (docs/sdk.md, "How the agent is built"): its options (the facilitator,
 * the notes, the caps, custody), the budget it counts against, the facilitator's terms read once, its trees and its
 * own view of the pool's roots, and the spend of a note from reservation to settlement. The payment modules
 * (PoolExactPayments, ShieldedPayments, TabPayments) each take one; X402Agent and the @x402/core schemes build them
 * over it.
 */
export class AgentWallet {
  /** What left or may be leaving the notes: settled payments and those in flight (budgetAtomic). */
  private committed = 0n;
  private facilitatorTerms?: Promise<FacilitatorTerms>;
  /** The facilitator's trees as of this agent's last proof (read from treesPath first): the next one fetches and hashes only the leaves added since. */
  private agentTrees?: Promise<AgentTrees>;
  /** The last write of the trees to treesPath. */
  private savingTrees: Promise<void> = Promise.resolve();
  /** The agent's own view of the pool's roots, when `ownRpc` is set. */
  private readonly chainRoots?: ChainRootsReader;

  constructor(readonly options: X402AgentOptions) {
    if (options.ownRpc !== undefined) this.chainRoots = new ChainRootsReader(options.ownRpc);
  }

  /** What counts against budgetAtomic now: settled payments, take included, and those in flight. */
  get committedAtomic(): bigint {
    return this.committed;
  }

  get prover(): ProofEngine {
    return this.options.prover ?? sharedProver();
  }

  /** Counts `gross` against budgetAtomic until released; refuses when it does not fit. */
  reserve(gross: bigint): () => void {
    const budget = this.options.budgetAtomic;
    if (budget !== undefined && this.committed + gross > budget) {
      throw new X402AgentError(
        "BUDGET_EXHAUSTED",
        `This payment takes ${gross} atomic USDC; ${this.committed} of the agent's budget of ${budget} is used. Nothing was paid.`,
      );
    }
    return this.count(gross);
  }

  /** Counts `value` against budgetAtomic whatever is left of it (what a payment of an earlier process may take), until released. */
  count(value: bigint): () => void {
    this.committed += value;
    let released = false;
    return () => {
      if (!released) this.committed -= value;
      released = true;
    };
  }

  /** The take settle-x402 adds to a price and who proves, from the facilitator's `supported` (read once). */
  terms(): Promise<FacilitatorTerms> {
    this.facilitatorTerms ??= this.options.facilitator
      .supported()
      .then(async (supported) => ({ takeBps: BigInt(supported.settleX402?.takeBps ?? 0), provenThrough: await this.provenThrough(supported), supported }))
      .catch((error: unknown) => {
        this.facilitatorTerms = undefined;
        throw error;
      });
    return this.facilitatorTerms;
  }

  /** The agent's pool, when its facilitator relays proofs of this SDK's circuit there (else no shielded proof). */
  async shieldedPool(): Promise<AgentPool | undefined> {
    const { supported } = await this.terms();
    const entrypoint = await proofsRelayedThrough(supported);
    if (entrypoint === undefined || supported.contracts === undefined) return undefined;
    return { chainId: this.options.network.chainId, entrypoint, privacyPool: supported.contracts.privacyPool, asset: this.options.network.asset };
  }

  /** Refuses a price above this payment's cap or the agent's maxPaymentAtomic, naming which. */
  checkPrice(url: string, price: bigint, paymentMaximum?: bigint): void {
    const agentMaximum = this.options.maxPaymentAtomic ?? DEFAULT_MAX_PAYMENT_ATOMIC;
    const maximum = paymentMaximum !== undefined && paymentMaximum < agentMaximum ? paymentMaximum : agentMaximum;
    if (price > maximum) {
      const [cap, remedy] =
        maximum === agentMaximum ? ["this agent's maxPaymentAtomic", "Raise maxPaymentAtomic"] : ["this payment's cap", "Pass a higher maxPaymentAtomic"];
      throw new X402AgentError("PRICE_ABOVE_MAXIMUM", `${url} asks ${price} atomic USDC, above ${cap} of ${maximum}; nothing was paid. ${remedy} to pay it.`);
    }
  }

  /**
   * Whether a payment withdrawing `withdrawnValue` is private: its own anonymity set, as the facilitator counts it
   * (the independent depositors whose screened deposits of at least that value are under an on-chain ASP root). One
   * below the privacy minimum needs acceptNotPrivate, as the facilitator's settles do (docs/api.md 4.4); refused here,
   * before anything is proven.
   */
  async checkPrivacy(what: string, withdrawnValue: bigint): Promise<PaymentPrivacy> {
    const answer = await this.options.facilitator.anonymitySet(withdrawnValue);
    const privacy = { private: answer.private, anonymitySet: answer.anonymitySet };
    if (privacy.private || this.options.acceptNotPrivate === true) return privacy;
    throw new X402AgentError(
      "PRIVACY_NOT_ACKNOWLEDGED",
      `${what} is NOT private: a payment withdrawing ${withdrawnValue} atomic USDC could have come from ${answer.anonymitySet ?? "an unknown number of"} independent depositor(s), ` +
        `below the privacy minimum of ${answer.minimumForPrivacy}. Nothing was proven or paid; set acceptNotPrivate to pay anyway.`,
    );
  }

  /**
   * The agent's own view of the pool's roots, once the facilitator's pool and entrypoint are the ones its own RPC
   * shows (else POOL_MISMATCH); undefined without ownRpc, which the agent says once.
   */
  async ownChain(pool: { entrypoint: string; privacyPool?: string }): Promise<ChainRootsReader | undefined> {
    const { chainRoots } = this;
    if (chainRoots === undefined) {
      warnRootsUnchecked();
      return undefined;
    }
    const privacyPool = pool.privacyPool ?? (await this.terms()).supported.contracts?.privacyPool;
    const entrypoint = await chainRoots.entrypoint();
    if (privacyPool?.toLowerCase() !== chainRoots.privacyPool.toLowerCase() || pool.entrypoint.toLowerCase() !== entrypoint.toLowerCase()) {
      throw new X402AgentError(
        "POOL_MISMATCH",
        `${this.options.facilitator.url} names pool ${privacyPool ?? "none"} and entrypoint ${pool.entrypoint}; the agent's notes are in ${chainRoots.privacyPool}, whose entrypoint ` +
          `is ${entrypoint} on its own RPC. Nothing was sent.`,
      );
    }
    return chainRoots;
  }

  /** The facilitator's trees as the agent holds them: read from treesPath the first time, then kept in memory. */
  trees(): Promise<AgentTrees> {
    const { treesPath } = this.options;
    this.agentTrees ??= treesPath === undefined ? Promise.resolve(emptyTrees()) : loadTrees(treesPath);
    return this.agentTrees;
  }

  /** Writes the trees to treesPath after a proof, out of the payment's way; a failed write only costs the next start a download. */
  keepTrees(trees: AgentTrees): void {
    const { treesPath } = this.options;
    if (treesPath !== undefined) this.savingTrees = this.savingTrees.then(() => saveTrees(treesPath, trees)).catch(() => undefined);
  }

  /**
   * Proves the spend of `note` here against the facilitator's quote (sdk/agent/local-proof.ts): the request's
   * quote and proof, and the change note it creates, which no one else knows.
   */
  async proveSpend(note: Note, expected: QuoteExpectation, fields: Record<string, unknown>) {
    // An access fee pays the facilitator itself, which knows the note it authorizes: no privacy to judge.
    const privacy = expected.route === "access-fee" ? {} : await this.checkPrivacy("This payment", expected.withdrawnValue);
    const chain = await this.ownChain({ entrypoint: expected.processooor });
    const trees = await this.trees();
    const { quote, proofTimeMs, engine, change, body, roots } = await proveLocally({ facilitator: this.options.facilitator, prover: this.prover, note, expected, fields, trees, chain });
    this.keepTrees(trees);
    this.emit({ step: "proved", proofTimeMs, engine, quote, roots, ...privacy });
    return { body, change: change.value > 0n ? change : undefined };
  }

  agentFields(): { agentId?: string } {
    return this.options.agentId === undefined ? {} : { agentId: this.options.agentId };
  }

  /**
   * Pays `gross` out of the smallest free note that holds it (reserved for this payment alone), within the budget. A
   * note the facilitator finds too small (INVALID_PAYMENT_AMOUNT: its take or fee floor is more than `supported`
   * said) is released, and the next larger one tried. A note the facilitator wants its access fee for pays it out of
   * itself (payAccessFee), and the payment is made out of the change note that fee authorized. The change note joins
   * the notes as the spent one is marked, in one write. A spend whose outcome is unknown leaves its note reserved
   * until NoteVault.reconcile reads the chain.
   */
  async payFromNotes<T extends SettlementAnswer>(gross: bigint, prepare: (note: Note) => Promise<PreparedSettlement<T>>, spentBy: (answer: T) => bigint): Promise<T> {
    const releaseBudget = this.reserve(gross);
    const fail = (error: unknown): never => {
      releaseBudget();
      throw error;
    };
    const tried = new Set<bigint>();
    let tooSmall: unknown;
    for (;;) {
      let held = await this.options.notes.reserve({ atLeast: gross, skip: tried }).catch(fail);
      if (held === undefined) {
        return fail(tooSmall ?? new X402AgentError("NO_NOTE", `No unspent note holds ${gross} atomic USDC, what this payment takes out of a note; deposit first.`));
      }
      tried.add(held.note.commitment);
      let attempt = await this.trySettle(held, prepare);
      const asked = "error" in attempt ? accessFeeAskedBy(attempt.error) : undefined;
      if (asked !== undefined) {
        const change = await payAccessFee(this, held, asked, gross).catch(fail);
        // What the fee left may no longer hold the payment: it joined the notes, and the next note is tried.
        if (change === undefined) continue;
        held = change;
        tried.add(held.note.commitment);
        attempt = await this.trySettle(held, prepare);
      }
      if ("answer" in attempt) {
        this.committed += spentBy(attempt.answer) - gross;
        await held.spent(attempt.prepared.changeNote(attempt.answer));
        this.emit({ step: "settled", answer: attempt.answer });
        return attempt.answer;
      }
      const { error, at } = attempt;
      // Quoting and proving spend nothing, nor does a refusal; SETTLEMENT_UNCERTAIN may have, and stays counted.
      // A facilitator that says the note is spent is not taken at its word: the chain decides (reconcile).
      const spentElsewhere = error instanceof FacilitatorError && error.code === "ALREADY_SPENT";
      const freed = !spentElsewhere && (at === "prepare" || spentNothing(error));
      await (freed ? held.released() : held.unsettled());
      if (at === "send" && error instanceof FacilitatorError && error.code === "INVALID_PAYMENT_AMOUNT") {
        tooSmall = error;
        continue;
      }
      if (freed || spentElsewhere) releaseBudget();
      throw error;
    }
  }

  /**
   * Runs one settlement request until it is final. A lost answer, an unconfirmed withdrawal and a busy note are
   * retried with the same request, which the facilitator answers from the note's lease: it never pays twice.
   */
  async untilSettled<T>(settle: () => Promise<T>): Promise<T> {
    const retries = this.options.settleRetries ?? 4;
    // Whether any attempt may have spent the note: a lost answer or one in flight, not a 503 (nothing was spent).
    let maySpend = false;
    for (let attempt = 0; ; attempt++) {
      try {
        return await settle();
      } catch (error) {
        const lostAnswer = !(error instanceof FacilitatorError);
        const retryable = lostAnswer || error.retryable;
        if (!retryable) throw error;
        maySpend ||= lostAnswer || error.status !== 503;
        if (attempt >= retries && !maySpend) {
          throw new X402AgentError(
            "FACILITATOR_UNAVAILABLE",
            `The facilitator could not take the payment in ${retries + 1} attempts (${(error as Error).message}); it spent nothing and the note is free: retry later.`,
          );
        }
        if (attempt >= retries) {
          throw new X402AgentError(
            "SETTLEMENT_UNCERTAIN",
            `The settlement is not final after ${retries + 1} attempts (${(error as Error).message}). The note may be spent: retry the same payment later, do not use the note elsewhere.`,
          );
        }
        await sleep(1000 * (lostAnswer ? LOST_ANSWER_RETRY_SECONDS : (error.retryAfterSeconds ?? LOST_ANSWER_RETRY_SECONDS)));
      }
    }
  }

  emit(event: AgentEvent): void {
    this.options.onEvent?.(event);
  }

  /**
   * The entrypoint the agent's own spends go through, when it proves them itself: the facilitator relays proofs of the
   * same circuit (proofsRelayedThrough) and the custody option allows it.
   */
  private async provenThrough(supported: SupportedAnswer): Promise<string | undefined> {
    const custody = this.options.custody ?? "auto";
    if (custody === "custodial") return undefined;
    const entrypoint = await proofsRelayedThrough(supported);
    if (entrypoint !== undefined || custody === "auto") return entrypoint;
    throw new X402AgentError(
      "NON_CUSTODIAL_UNAVAILABLE",
      `${this.options.facilitator.url} does not relay proofs of this SDK's withdrawal circuit; with custody "non-custodial" no note is sent to it. Nothing was paid.`,
    );
  }

  /**
   * Prepares and sends the settlement out of the held note: its answer, or the error and the step that failed. The
   * reservation records that the spend may leave before it does.
   */
  private async trySettle<T>(
    held: NoteReservation,
    prepare: (note: Note) => Promise<PreparedSettlement<T>>,
  ): Promise<{ prepared: PreparedSettlement<T>; answer: T } | { error: unknown; at: "prepare" | "send" }> {
    let prepared: PreparedSettlement<T>;
    try {
      prepared = await prepare(held.note);
      await held.sending(prepared.hold);
    } catch (error) {
      return { error, at: "prepare" };
    }
    try {
      return { prepared, answer: await this.untilSettled(prepared.send) };
    } catch (error) {
      return { error, at: "send" };
    }
  }
}

/**
 * Whether a settlement's failure says the note was not spent: a refusal of the facilitator (but ALREADY_SPENT, which
 * the chain decides), or every attempt answered 503 (FACILITATOR_UNAVAILABLE).
 */
export function spentNothing(error: unknown): boolean {
  if (error instanceof X402AgentError) return error.code === "FACILITATOR_UNAVAILABLE";
  return error instanceof FacilitatorError && !error.retryable && error.code !== "ALREADY_SPENT";
}

/**
 * A custodial settlement: the note and the change secrets the agent derived go to the facilitator, which proves
 * and returns the change note.
 */
export function custodial<T extends SettleX402Answer | SettleAnswer>(
  note: Note,
  settle: (secrets: { serviceDeposit: WireNote; nextNullifier: string; nextSecret: string }) => Promise<T>,
): PreparedSettlement<T> {
  const change = deriveChangeSecrets(note);
  const secrets = { serviceDeposit: noteToWire(note), nextNullifier: change.nullifier.toString(), nextSecret: change.secret.toString() };
  return { send: () => settle(secrets), changeNote: (answer) => ("nextDeposit" in answer && answer.nextDeposit !== undefined ? noteFromWire(answer.nextDeposit) : undefined) };
}

/** Whether this process said that an agent proves against unchecked roots (warnRootsUnchecked). */
let saidRootsUnchecked = false;

/**
 * Says once in the process's life, as a Node warning (stderr unless the process listens for `warning`), that an agent
 * without ownRpc proves against roots nobody checked.
 */
function warnRootsUnchecked(): void {
  if (saidRootsUnchecked) return;
  saidRootsUnchecked = true;
  process.emitWarning(
    "An X402Agent without ownRpc proves against the roots its facilitator serves, unchecked: an operator that serves older trees one step at a " +
      "time can learn which leaf is the agent's note, and so which deposit pays. Set ownRpc to an RPC the operator does not run (docs/sdk.md, \"Roots the agent checks\").",
    { type: "PrivacyWarning", code: "X402_ROOTS_UNCHECKED" },
  );
}
