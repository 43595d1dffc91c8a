import { setTimeout as sleep } from "node:timers/promises";
import { encodeAccessFeeData, encodeRelayData, withdrawalContext } from "../circuit/context.js";
import type { WithdrawProof } from "../circuit/prover.js";
import { buildWithdrawInput } from "../circuit/withdraw-input.js";
import { FacilitatorError, type FacilitatorClient, type QuoteAnswer, type QuoteTabAnswer, type TreesAnswer } from "../client/facilitator-client.js";
import { feeOf } from "../fees/relay-fee.js";
import { changeNoteOf, deriveChangeSecrets, nullifierHashOf, refundPrecommitmentOf, type Note } from "../note/note.js";
import type { EngineName, ProofEngine } from "../prover/local-prover.js";
import type { MerkleWitness } from "../tree/merkle-witness.js";
import type { SyncedTree } from "../tree/synced-tree.js";
import { tabChannelOf, tabDepositNonceOf, type BatchSettlementRequirement } from "../x402/batch-settlement.js";
import { paymentNonceOf, type ExactRequirement } from "../x402/index.js";
import { X402AgentError } from "./errors.js";
import { emptyTrees, type AgentTrees } from "./tree-file.js";

/** What the agent asked for: a quote binding anything else is refused before anything is proven. */
export interface QuoteExpectation {
  route: QuoteAnswer["route"];
  /** What may leave the note: the price plus the take the facilitator's `supported` announced. */
  withdrawnValue: bigint;
  feeBps: bigint;
  /** The entrypoint of the facilitator's `supported` contracts. */
  processooor: string;
  /** The payee of a settle, or the treasury of an access fee; settle-x402's recipient is the facilitator's single-use payer. */
  recipient?: string;
  /** access-fee: the nullifier hash the fee authorizes (the change note's). */
  authorizedNullifierHash?: bigint;
  /** settle-x402: the seller's entry, whose terms the quote's payment nonce must bind. */
  accepted?: ExactRequirement;
  /** open-tab: the channel the agent asked for, which the quote's payment nonce must bind (its payer is the quote's recipient). */
  tab?: { accepted: BatchSettlementRequirement; payerAuthorizer: string; salt: string };
}

/** A quote request's answer: the quote, and for open-tab the channel it binds. */
export type QuotedAnswer = { quote: QuoteAnswer } | QuoteTabAnswer;

/** How far a settle-x402 quote's payment window may reach past the seller's maxTimeoutSeconds (its clock, quote time). */
const PAYMENT_WINDOW_SLACK_SECONDS = 300;

/** A spend proven by the agent: the request's quote and proof, and the change note only the agent knows. */
export interface LocalProof {
  quote: QuoteAnswer;
  /** The quote request's whole answer (quote-tab's names the channel and the deposit's salt and window). */
  quoted: QuotedAnswer;
  proof: WithdrawProof;
  proofTimeMs: number;
  /** Which engine made the proof: the native prover or the wasm engine. */
  engine: EngineName;
  change: Note;
  /**
   * The proof-carrying settle's request: the fields, the quote, the proof and, for settle-x402, the precommitment
   * of the refund note (the payer sweep returns an unused payment there; its secrets stay the agent's).
   */
  body: Record<string, unknown> & { quote: QuoteAnswer; proof: WithdrawProof; refundPrecommitment?: string };
}

/**
 * How long the agent waits for the facilitator's trees to hold its note (a change note made a moment ago) and to
 * rebuild the quoted roots (a quote and a leaf list read on either side of a change of the ASP tree).
 */
export const NOTE_WAIT_MS = 10_000;
export const NOTE_POLL_MS = 500;
/**
 * How long the agent waits out trees answers the facilitator holds back (429 RATE_LIMITED with Retry-After: whole
 * trees beyond its bandwidth budget, which a cold agent asks for): well within a quote's life.
 */
const TREES_WAIT_MS = 30_000;

/**
 * Proves a spend of `note` as the facilitator's quote of `fields` says (docs/sdk.md, "Non-custodial mode"): the quote
 * must bind exactly what the agent expects; both trees are brought up to date from the public leaf lists (the
 * leaves after those the agent holds), so the agent never asks anyone for its own path, and must give the quoted
 * roots; the proof is made here, with change secrets that never leave the agent. While the trees do not hold the
 * note or do not rebuild the quoted roots, a new quote is asked for, for a while; a tree whose leaves do not
 * rebuild the quoted root is dropped and fetched whole (it was rebuilt since: an ASP revocation, a reorg).
 */
export async function proveLocally(options: {
  facilitator: FacilitatorClient;
  prover: ProofEngine;
  note: Note;
  expected: QuoteExpectation;
  /** The settle request's fields (its terms), which the quote request carries too. */
  fields: Record<string, unknown>;
  /** The trees of earlier spends, extended by the leaves added since (default: fetched whole). */
  trees?: AgentTrees;
}): Promise<LocalProof> {
  const { facilitator, prover, note, expected } = options;
  const trees = options.trees ?? emptyTrees();
  const quoteRequest = { ...options.fields, nullifierHash: nullifierHashOf(note.nullifier).toString() };
  const requestQuote: () => Promise<QuotedAnswer> = {
    settle: () => facilitator.quote(quoteRequest),
    "settle-x402": () => facilitator.quoteX402(quoteRequest),
    "open-tab": () => facilitator.quoteTab(quoteRequest),
    "access-fee": () => facilitator.quoteAccessFee(quoteRequest),
  }[expected.route];
  const deadline = Date.now() + NOTE_WAIT_MS;
  for (;;) {
    const { quoted, askedFrom, stateWitness, aspWitness } = await inTurn(trees, async () => {
      const quoted = await requestQuote();
      checkQuote(quoted, note, expected);
      const { quote } = quoted;
      const askedFrom = { state: trees.state.fetched, asp: trees.asp.fetched };
      receiveTrees(trees, await treesAfter(facilitator, askedFrom));
      // Built side by side: one tree's JavaScript runs while the other is hashed natively.
      const [stateWitness, aspWitness] = await Promise.all([
        witnessOf(trees.state, { root: quote.stateRoot, depth: quote.stateTreeDepth, size: quote.stateTreeSize }, note.commitment, "state"),
        witnessOf(trees.asp, { root: quote.aspRoot, depth: quote.aspTreeDepth, size: quote.aspTreeSize }, note.label, "ASP"),
      ]);
      return { quoted, askedFrom, stateWitness, aspWitness };
    });
    const { quote } = quoted;
    if (stateWitness instanceof X402AgentError || aspWitness instanceof X402AgentError) {
      // A tree kept from earlier that does not rebuild the quoted root was rebuilt since (an ASP revocation, a
      // reorg): witnessOf dropped it, and it is fetched whole at once.
      const dropped = (witness: MerkleWitness | X402AgentError, from: number) => witness instanceof X402AgentError && witness.code === "QUOTE_REFUSED" && from > 0;
      const refetchNow = dropped(stateWitness, askedFrom.state) || dropped(aspWitness, askedFrom.asp);
      if (Date.now() < deadline) {
        if (!refetchNow) await sleep(NOTE_POLL_MS);
        continue;
      }
      throw stateWitness instanceof X402AgentError ? stateWitness : aspWitness;
    }
    const changeSecrets = deriveChangeSecrets(note);
    const withdrawnValue = BigInt(quote.withdrawnValue);
    // Every proof binds a refund note's commitment; it must hide whether or not the spend is ever refunded.
    const refundPrecommitment = refundPrecommitmentOf(note);
    const input = buildWithdrawInput({
      note,
      withdrawnValue,
      changeSecrets,
      stateWitness,
      aspWitness,
      context: BigInt(quote.context),
      relayFeeBPS: BigInt(quote.feeBps),
      refundPrecommitment,
    });
    const { proof, publicSignals, proofTimeMs, engine } = await prover.prove(input);
    const refund = expected.route === "settle-x402" || expected.route === "open-tab" ? { refundPrecommitment: refundPrecommitment.toString() } : {};
    return {
      quote,
      quoted,
      proof: { proof, publicSignals },
      proofTimeMs,
      engine,
      change: changeNoteOf(note, withdrawnValue, changeSecrets),
      body: { ...options.fields, quote, proof: { proof, publicSignals }, ...refund },
    };
  }
}

/** The work on each agent's trees that is under way or waiting, by trees: the last of it. */
const treesTurns = new WeakMap<AgentTrees, Promise<unknown>>();

/**
 * Runs `work` once the work on `trees` asked for before it is done. Concurrent spends of one agent share its trees:
 * each takes its quote, brings the trees up to the quoted sizes and takes its paths in turn (tens of milliseconds
 * warm), so a later quote never finds the trees moved past it, and the proofs run side by side after.
 */
export function inTurn<T>(trees: AgentTrees, work: () => Promise<T>): Promise<T> {
  const turn = (treesTurns.get(trees) ?? Promise.resolve()).then(work);
  treesTurns.set(trees, turn.catch(() => undefined));
  return turn;
}

/** The leaves after `from`, asked again after the wait a 429 names, for up to TREES_WAIT_MS in all. */
export async function treesAfter(facilitator: FacilitatorClient, from: { state: number; asp: number }): Promise<TreesAnswer> {
  const deadline = Date.now() + TREES_WAIT_MS;
  for (;;) {
    try {
      return await facilitator.trees(from);
    } catch (error) {
      const waitMs = error instanceof FacilitatorError && error.status === 429 && error.retryAfterSeconds !== undefined ? error.retryAfterSeconds * 1000 : undefined;
      if (waitMs === undefined || Date.now() + waitMs > deadline) throw error;
      await sleep(waitMs);
    }
  }
}

/** Takes the served leaves into the agent's trees; a slice that is not whole leaves, or starts past them, is refused. */
export function receiveTrees(trees: AgentTrees, served: TreesAnswer): void {
  try {
    trees.state.receive(served.state.from, served.state.leaves);
    trees.asp.receive(served.asp.from, served.asp.leaves);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    trees.state.reset();
    trees.asp.reset();
    throw new X402AgentError("QUOTE_REFUSED", `The facilitator's trees answer is malformed (${error.message}). Nothing was proven or spent.`);
  }
}

/**
 * Refuses a quote that binds another note, amount, fee, recipient, (settle-x402) seller and window or (access-fee)
 * authorized note than the agent asked for, or a context that is not its fields'.
 */
function checkQuote(quoted: QuotedAnswer, note: Note, expected: QuoteExpectation): void {
  const { quote } = quoted;
  const withdrawnValue = BigInt(quote.withdrawnValue);
  const feeBps = BigInt(quote.feeBps);
  const payment = quotedPayment(quote);
  const authorized = quote.authorizedNullifierHash === undefined ? undefined : BigInt(quote.authorizedNullifierHash);
  const data =
    quote.route === "access-fee"
      ? encodeAccessFeeData({ treasury: quote.recipient, nullifierHash: authorized ?? 0n })
      : encodeRelayData({
          recipient: quote.recipient,
          feeRecipient: quote.feeRecipient,
          relayFeeBPS: feeBps,
          ...(payment !== undefined && { payment: { nonce: payment.nonce, validBefore: payment.window.validBefore } }),
        });
  const problems = [
    ...paymentProblems(payment, expected),
    ...tabProblems(quoted, expected),
    quote.route !== expected.route && `it is for ${quote.route}, not ${expected.route}`,
    BigInt(quote.nullifierHash) !== nullifierHashOf(note.nullifier) && "it names another note",
    withdrawnValue !== expected.withdrawnValue && `it withdraws ${withdrawnValue}, not ${expected.withdrawnValue}`,
    withdrawnValue > note.value && `it withdraws ${withdrawnValue}, more than the note's ${note.value}`,
    feeBps !== expected.feeBps && `its take is ${feeBps} bps, not the ${expected.feeBps} bps announced`,
    BigInt(quote.fee) !== feeOf(withdrawnValue, feeBps) && `its fee ${quote.fee} is not ${feeBps} bps of ${withdrawnValue}`,
    quote.processooor.toLowerCase() !== expected.processooor.toLowerCase() && `its processooor ${quote.processooor} is not the entrypoint ${expected.processooor}`,
    expected.recipient !== undefined && quote.recipient.toLowerCase() !== expected.recipient.toLowerCase() && `it pays ${quote.recipient}, not ${expected.recipient}`,
    authorized !== expected.authorizedNullifierHash && `it authorizes the note of nullifier hash ${authorized ?? "none"}, not ${expected.authorizedNullifierHash ?? "none"}`,
    BigInt(quote.context) !== withdrawalContext({ processooor: quote.processooor, data }, BigInt(quote.scope)) &&
      "its context is not that of its recipient, fee recipient, fee and payment (or authorized note)",
  ].filter((problem): problem is string => typeof problem === "string");
  if (problems.length > 0) {
    throw new X402AgentError("QUOTE_REFUSED", `The facilitator's quote is not what this agent asked for: ${problems.join("; ")}. Nothing was proven or spent.`);
  }
}

/** A settle-x402 quote's payment, when it names one. */
function quotedPayment(quote: QuoteAnswer) {
  const { paymentNonce, paymentSalt, paymentValidAfter, paymentValidBefore } = quote;
  if (paymentNonce === undefined || paymentSalt === undefined || paymentValidAfter === undefined || paymentValidBefore === undefined) return undefined;
  return { nonce: paymentNonce, salt: paymentSalt, window: { validAfter: BigInt(paymentValidAfter), validBefore: BigInt(paymentValidBefore) } };
}

/** What is wrong with a quote's payment: a settle-x402 quote must bind the seller's entry in a window it allows. */
function paymentProblems(payment: ReturnType<typeof quotedPayment>, expected: QuoteExpectation): string[] {
  if (expected.tab !== undefined) return [];
  if (expected.accepted === undefined) return payment === undefined ? [] : ["it binds a payment this spend does not make"];
  if (payment === undefined) return ["it binds no payment to the seller"];
  const latest = BigInt(Math.ceil(Date.now() / 1000) + expected.accepted.maxTimeoutSeconds + PAYMENT_WINDOW_SLACK_SECONDS);
  return [
    paymentNonceOf(expected.accepted, payment.window, payment.salt) !== payment.nonce && "its payment nonce does not bind this seller's terms",
    payment.window.validBefore > latest && `its payment stays valid until ${payment.window.validBefore}, past the seller's timeout`,
  ].filter((problem): problem is string => typeof problem === "string");
}

/**
 * What is wrong with a quote-tab answer: its payment nonce must be the deposit nonce of the channel the agent asked
 * for, with the quote's recipient as payer (the channel the answer names), in a window the seller's timeout allows.
 */
function tabProblems(quoted: QuotedAnswer, expected: QuoteExpectation): string[] {
  if (expected.tab === undefined) return [];
  const payment = quotedPayment(quoted.quote);
  if (!("channelId" in quoted) || payment === undefined) return ["it binds no channel deposit"];
  const { channelId } = tabChannelOf({ ...expected.tab, payer: quoted.quote.recipient });
  const latest = BigInt(Math.ceil(Date.now() / 1000) + (expected.tab.accepted.maxTimeoutSeconds ?? 60) + PAYMENT_WINDOW_SLACK_SECONDS);
  return [
    quoted.channelId.toLowerCase() !== channelId.toLowerCase() && `it names channel ${quoted.channelId}, not the agent's ${channelId}`,
    quoted.payer.toLowerCase() !== quoted.quote.recipient.toLowerCase() && "its channel's payer is not the relay's recipient",
    (payment.salt !== quoted.depositSalt || payment.nonce !== tabDepositNonceOf(channelId, payment.salt)) && "its payment nonce is not the channel's deposit nonce",
    BigInt(quoted.validBefore) !== payment.window.validBefore && "its deposit window is not the quoted payment's",
    payment.window.validBefore > latest && `its deposit stays valid until ${payment.window.validBefore}, past the seller's timeout`,
  ].filter((problem): problem is string => typeof problem === "string");
}

/**
 * The path of `leaf` in the tree of the first `quoted.size` leaves of `synced`, once that tree has the quoted root
 * and depth; else why not: the leaves do not rebuild the quoted root (and `synced` is dropped, to be fetched whole),
 * or `leaf` is not among them.
 */
export async function witnessOf(
  synced: SyncedTree,
  quoted: { root: string; depth: number; size: number },
  leaf: bigint,
  name: string,
): Promise<MerkleWitness | X402AgentError> {
  const tree = await synced.treeOf(quoted.size);
  if (tree === undefined || tree.root !== BigInt(quoted.root) || tree.depth !== quoted.depth) {
    synced.reset();
    return new X402AgentError(
      "QUOTE_REFUSED",
      `The facilitator's ${name} leaves do not rebuild the ${name} root it quoted (${quoted.root} at depth ${quoted.depth} over ${quoted.size} leaves). Nothing was proven or spent.`,
    );
  }
  const index = tree.leaves.indexOf(leaf);
  if (index >= 0) return tree.witness(index);
  const what = name === "state" ? "commitment (its indexer has not read the deposit or change yet)" : "label (the ASP has not approved the deposit)";
  return new X402AgentError("NOTE_NOT_IN_TREE", `The facilitator's ${name} tree does not hold the note's ${what}. Nothing was proven or spent.`);
}
