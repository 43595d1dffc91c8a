import { setTimeout as sleep } from "node:timers/promises";
import { hexlify, randomBytes, toBeHex } from "ethers";
import { encodeAccessFeeData, encodePoolAuthorization, encodeRelayData, encodeTabOpening, withdrawalContext } from "../circuit/context.js";
import type { WithdrawProof } from "../circuit/prover.js";
import { buildWithdrawInput } from "../circuit/withdraw-input.js";
import { FacilitatorError, type FacilitatorClient, type QuoteAnswer, type QuoteTabAnswer, type TreesAnswer } from "../client/facilitator-client.js";
import { feeOf } from "../fees/relay-fee.js";
import { changeNoteOf, deriveChangeSecrets, nullifierHashOf, refundPrecommitmentOf, type Note } from "../note/note.js";
import type { EngineName, ProofEngine } from "../prover/local-prover.js";
import type { MerkleWitness } from "../tree/merkle-witness.js";
import type { SyncedTree } from "../tree/synced-tree.js";
import { tabChannelOf, type BatchSettlementRequirement } from "../x402/batch-settlement.js";
import { poolTransferFor, type ExactRequirement } from "../x402/index.js";
import { belowFloor, type ChainRoots, type ChainRootsReader, type RootsSource } from "./chain-roots.js";
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
  /** The payee of a settle, or the treasury of an access fee; settle-x402's is the seller's payTo (the pool pays it). */
  recipient?: string;
  /** access-fee: the nullifier hash the fee authorizes (the change note's). */
  authorizedNullifierHash?: bigint;
  /** settle-x402: the seller's entry, whose price the pool's transfer of the quote must be, to its payTo. */
  accepted?: ExactRequirement;
  /**
   * open-tab: the channel the agent asked for (its payer is the quote's recipient, the note's TabPayer, which the relay
   * checks) and when the tab's lifetime ends: the quote's TabOpening must be exactly these.
   */
  tab?: { accepted: BatchSettlementRequirement; payerAuthorizer: string; salt: string; reclaimableAfter: bigint };
}

/** A quote request's answer: the quote, and for open-tab the channel it binds. */
export type QuotedAnswer = { quote: QuoteAnswer } | QuoteTabAnswer;

/** How far a settle-x402 quote's payment window may reach past the seller's maxTimeoutSeconds (its clock, quote time). */
const PAYMENT_WINDOW_SLACK_SECONDS = 300;

/** A spend proven by the agent: the request's quote and proof, and the change note only the agent knows. */
export interface LocalProof {
  quote: QuoteAnswer;
  /** The quote request's whole answer (quote-tab's names the channel and the tab's lifetime). */
  quoted: QuotedAnswer;
  proof: WithdrawProof;
  proofTimeMs: number;
  /** Which engine made the proof: the native prover or the wasm engine. */
  engine: EngineName;
  /** Where the roots the proof is made against were checked. */
  roots: RootsSource;
  change: Note;
  /**
   * The proof-carrying settle's request: the fields, the quote, the proof and, for settle-x402 and open-tab, the
   * request's retry key (random: a retry that sends it again is answered the payment; anyone else's copy is not).
   */
  body: Record<string, unknown> & { quote: QuoteAnswer; proof: WithdrawProof; retryKey?: string };
}

/**
 * How long the agent waits for the facilitator's trees to hold its note (a change note made a moment ago) and to
 * reach the roots its own RPC shows.
 */
export const NOTE_WAIT_MS = 10_000;
export const NOTE_POLL_MS = 500;
/**
 * How long the agent waits out trees answers the facilitator holds back (429 RATE_LIMITED with Retry-After: whole
 * trees beyond its bandwidth budget, which a cold agent asks for): well within a quote's life.
 */
const TREES_WAIT_MS = 30_000;

/** Trees that hold the agent's note, found before the note was named to anyone, and the paths in them. */
export interface NoteTrees {
  served: TreesAnswer;
  stateWitness: MerkleWitness;
  aspWitness: MerkleWitness;
  /** Where the served roots were checked (the agent's own RPC, or nowhere). */
  roots: RootsSource;
  /** The chain's roots the served trees were checked against, when the agent has an RPC of its own. */
  seen?: ChainRoots;
}

/**
 * The facilitator's trees once they hold `note`, brought up to date from the public leaf lists: asked for without
 * naming the note (no nullifier hash, no path lookup), so waiting for a note made a moment ago tells the facilitator
 * nothing. With `chain` (the agent's own RPC), trees older than the roots the chain shows are refused, and asked for
 * again for a while: a facilitator serving older trees one step at a time cannot see where the agent's note is.
 * A kept tree that does not rebuild the served root was rebuilt since (an ASP revocation, a reorg): it is dropped
 * and fetched whole at once.
 */
export async function treesHoldingNote(options: { facilitator: FacilitatorClient; trees: AgentTrees; note: Note; chain?: ChainRootsReader }): Promise<NoteTrees> {
  const { facilitator, trees, note, chain } = options;
  const deadline = Date.now() + NOTE_WAIT_MS;
  for (;;) {
    const seen = await chain?.read();
    const found = await inTurn(trees, async () => {
      const askedFrom = { state: trees.state.fetched, asp: trees.asp.fetched };
      const served = await treesAfter(facilitator, askedFrom);
      receiveTrees(trees, served);
      const stale = seen === undefined ? undefined : await chain!.requireAtLeast(served, seen, "trees answer").then(() => undefined, (error: unknown) => error);
      // Built side by side: one tree's JavaScript runs while the other is hashed natively.
      const [stateWitness, aspWitness] = await Promise.all([
        witnessOf(trees.state, served.state, note.commitment, "state"),
        witnessOf(trees.asp, served.asp, note.label, "ASP"),
      ]);
      return { served, askedFrom, stale, stateWitness, aspWitness };
    });
    const { served, askedFrom, stale, stateWitness, aspWitness } = found;
    if (stale === undefined && !(stateWitness instanceof X402AgentError) && !(aspWitness instanceof X402AgentError)) {
      return { served, stateWitness, aspWitness, seen, roots: seen === undefined ? { checkedAt: "unchecked" } : { checkedAt: "own-rpc", block: seen.block } };
    }
    if (stale !== undefined && !(stale instanceof X402AgentError && stale.code === "ROOTS_STALE")) throw stale;
    const problem = stale ?? (stateWitness instanceof X402AgentError ? stateWitness : (aspWitness as X402AgentError));
    if (Date.now() >= deadline) throw problem;
    const dropped = (witness: MerkleWitness | X402AgentError, from: number) => witness instanceof X402AgentError && witness.code === "QUOTE_REFUSED" && from > 0;
    if (!dropped(stateWitness, askedFrom.state) && !dropped(aspWitness, askedFrom.asp)) await sleep(NOTE_POLL_MS);
  }
}

/**
 * Proves a spend of `note` as the facilitator's quote of `fields` says (docs/sdk.md, "Non-custodial mode"): first the
 * trees that hold the note (treesHoldingNote, the note not yet named), then one quote, which must bind exactly what
 * the agent expects and name trees no smaller than those (nor older than the agent's own RPC shows); the paths are
 * taken in the quoted trees and the proof is made here, with change secrets that never leave the agent. A quote that
 * fails any of this is refused, and never asked for again under the same nullifier hash.
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
  /** The agent's own RPC (X402AgentOptions.ownRpc): the quote's roots must be at least as new as the chain's. */
  chain?: ChainRootsReader;
}): Promise<LocalProof> {
  const { facilitator, prover, note, expected, chain } = options;
  const trees = options.trees ?? emptyTrees();
  const holding = await treesHoldingNote({ facilitator, trees, note, chain });
  const quoteRequest = { ...options.fields, nullifierHash: nullifierHashOf(note.nullifier).toString() };
  const quoteOnce: () => Promise<QuotedAnswer> = {
    settle: () => facilitator.quote(quoteRequest),
    "settle-x402": () => facilitator.quoteX402(quoteRequest),
    "open-tab": () => facilitator.quoteTab(quoteRequest),
    "access-fee": () => facilitator.quoteAccessFee(quoteRequest),
  }[expected.route];
  const requestQuote = () => untilAdmitted(quoteOnce);
  const { quoted, stateWitness, aspWitness } = await inTurn(trees, async () => {
    const quoted = await requestQuote();
    checkQuote(quoted, note, expected);
    const { quote } = quoted;
    const quotedTrees = {
      state: { root: quote.stateRoot, depth: quote.stateTreeDepth, size: quote.stateTreeSize },
      asp: { root: quote.aspRoot, depth: quote.aspTreeDepth, size: quote.aspTreeSize },
    };
    // The chain's word first: it names what the agent's own RPC showed, not only what the facilitator said before.
    if (holding.seen !== undefined) await chain!.requireAtLeast(quotedTrees, holding.seen, "quote");
    if (belowFloor(quotedTrees, holding.served)) {
      throw new X402AgentError(
        "ROOTS_STALE",
        `The facilitator's quote names trees of ${quote.stateTreeSize} state and ${quote.aspTreeSize} ASP leaves, fewer than the ${holding.served.state.size} and ` +
          `${holding.served.asp.size} it served a moment before: a quote of an older tree can learn which leaf is the agent's. Nothing was proven or spent.`,
      );
    }
    if (trees.state.fetched < quote.stateTreeSize || trees.asp.fetched < quote.aspTreeSize) {
      receiveTrees(trees, await treesAfter(facilitator, { state: trees.state.fetched, asp: trees.asp.fetched }));
    }
    // A quote of the trees just served (the usual case) takes the paths already taken in them.
    const sameAs = (tree: { root: string; size: number }, served: { root: string; size: number }) => tree.size === served.size && tree.root === served.root;
    const [stateWitness, aspWitness] = await Promise.all([
      sameAs(quotedTrees.state, holding.served.state) ? holding.stateWitness : witnessOf(trees.state, quotedTrees.state, note.commitment, "state"),
      sameAs(quotedTrees.asp, holding.served.asp) ? holding.aspWitness : witnessOf(trees.asp, quotedTrees.asp, note.label, "ASP"),
    ]);
    return { quoted, stateWitness, aspWitness };
  });
  // No second quote: one under the same nullifier hash against another tree could tell where the note is.
  if (stateWitness instanceof X402AgentError) throw stateWitness;
  if (aspWitness instanceof X402AgentError) throw aspWitness;
  const { quote } = quoted;
  const spend = { withdrawnValue: BigInt(quote.withdrawnValue), stateWitness, aspWitness, context: BigInt(quote.context), relayFeeBPS: BigInt(quote.feeBps) };
  const { proof, publicSignals, proofTimeMs, engine, change } = await proveNoteSpend(prover, note, spend);
  // What makes a retry of a settle that answers a payment the agent's (anyone can copy the proof once it is relayed):
  // a key fresh for this request, derived from nothing of the note's, so that it links nothing to the deposit.
  const retry = expected.route === "settle-x402" || expected.route === "open-tab" ? { retryKey: hexlify(randomBytes(32)) } : {};
  return {
    quote,
    quoted,
    proof: { proof, publicSignals },
    proofTimeMs,
    engine,
    roots: holding.roots,
    change,
    body: { ...options.fields, quote, proof: { proof, publicSignals }, ...retry },
  };
}

/**
 * Proves a withdrawal of `withdrawnValue` out of `note` with the change secrets derived from it (so recovery from the
 * seed finds the change note) and its refund precommitment: every proof binds one, so that it hides whether or not
 * the spend is ever refunded. Returns the proof and the change note it makes.
 */
export async function proveNoteSpend(
  prover: ProofEngine,
  note: Note,
  spend: { withdrawnValue: bigint; stateWitness: MerkleWitness; aspWitness: MerkleWitness; context: bigint; relayFeeBPS: bigint },
) {
  const changeSecrets = deriveChangeSecrets(note);
  const proven = await prover.prove(buildWithdrawInput({ note, ...spend, changeSecrets, refundPrecommitment: refundPrecommitmentOf(note) }));
  return { ...proven, change: changeNoteOf(note, spend.withdrawnValue, changeSecrets) };
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
export function treesAfter(facilitator: FacilitatorClient, from: { state: number; asp: number }): Promise<TreesAnswer> {
  return untilAdmitted(() => facilitator.trees(from));
}

/**
 * `request`, sent again after the wait a 429 names (the facilitator admitted nothing of it), for up to
 * TREES_WAIT_MS in all: a trees answer held back, or a quote refused for the request that came just before it.
 */
async function untilAdmitted<T>(request: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + TREES_WAIT_MS;
  for (;;) {
    try {
      return await request();
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
  const nullifierHash = nullifierHashOf(note.nullifier);
  const fees = { feeRecipient: quote.feeRecipient, relayFeeBPS: feeBps };
  const data =
    quote.route === "access-fee"
      ? encodeAccessFeeData({ treasury: quote.recipient, nullifierHash: authorized ?? 0n })
      : expected.tab !== undefined
        ? encodeTabOpening({ channel: tabChannelOf({ ...expected.tab, payer: quote.recipient }).channelConfig, reclaimableAfter: expected.tab.reclaimableAfter, ...fees })
      : expected.accepted !== undefined && payment !== undefined
        ? encodePoolAuthorization({ ...poolTransferFor(expected.accepted, payment.window, nullifierHash), ...fees })
        : encodeRelayData({ recipient: quote.recipient, ...fees });
  const problems = [
    ...paymentProblems(payment, expected, nullifierHash),
    ...tabProblems(quoted, expected),
    quote.route !== expected.route && `it is for ${quote.route}, not ${expected.route}`,
    BigInt(quote.nullifierHash) !== nullifierHash && "it names another note",
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
  const { paymentNonce, paymentValidAfter, paymentValidBefore } = quote;
  if (paymentNonce === undefined || paymentValidAfter === undefined || paymentValidBefore === undefined) return undefined;
  return { nonce: paymentNonce, window: { validAfter: BigInt(paymentValidAfter), validBefore: BigInt(paymentValidBefore) } };
}

/**
 * What is wrong with a quote's payment: a settle-x402 quote must have the pool authorize the seller's price to its
 * payTo, under the note's nullifier hash, in a window the seller's timeout allows.
 */
function paymentProblems(payment: ReturnType<typeof quotedPayment>, expected: QuoteExpectation, nullifierHash: bigint): string[] {
  if (expected.tab !== undefined) return [];
  if (expected.accepted === undefined) return payment === undefined ? [] : ["it binds a payment this spend does not make"];
  if (payment === undefined) return ["it binds no payment to the seller"];
  const latest = BigInt(Math.ceil(Date.now() / 1000) + expected.accepted.maxTimeoutSeconds + PAYMENT_WINDOW_SLACK_SECONDS);
  return [
    payment.nonce.toLowerCase() !== toBeHex(nullifierHash, 32) && "its payment nonce is not the note's nullifier hash",
    payment.window.validBefore > latest && `its payment stays valid until ${payment.window.validBefore}, past the seller's timeout`,
  ].filter((problem): problem is string => typeof problem === "string");
}

/**
 * What is wrong with a quote-tab answer: it must name the channel the agent asked for, with the quote's recipient as
 * payer, and the tab's lifetime the agent asked for, in the quote (paymentNonce, paymentValidBefore) and in the answer
 * alike. The context, checked after, binds them into the relay's TabOpening.
 */
function tabProblems(quoted: QuotedAnswer, expected: QuoteExpectation): string[] {
  if (expected.tab === undefined) return [];
  if (!("channelId" in quoted)) return ["it names no channel"];
  const { quote } = quoted;
  const { channelId } = tabChannelOf({ ...expected.tab, payer: quote.recipient });
  const reclaimableAfter = expected.tab.reclaimableAfter;
  return [
    quoted.channelId.toLowerCase() !== channelId.toLowerCase() && `it names channel ${quoted.channelId}, not the agent's ${channelId}`,
    quoted.payer.toLowerCase() !== quote.recipient.toLowerCase() && "its channel's payer is not the relay's recipient",
    quote.paymentNonce?.toLowerCase() !== channelId.toLowerCase() && "its payment nonce is not the channel's id",
    (quote.paymentValidBefore === undefined || BigInt(quote.paymentValidBefore) !== reclaimableAfter || BigInt(quoted.reclaimableAfter) !== reclaimableAfter) &&
      `its tab is reclaimable from another time than the agent's ${reclaimableAfter}`,
    quote.paymentValidAfter !== undefined && "it binds a payment window a tab has none of",
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
