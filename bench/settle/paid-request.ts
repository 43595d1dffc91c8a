import { setTimeout as sleep } from "node:timers/promises";
import { decodePaymentResponseHeader } from "@x402/fetch";
import type { AgentEvent, X402Settlement } from "../../sdk/agent/index.js";
import { plainBuyer } from "../../test/x402/helpers/plain-buyer.js";
import type { PaymentWorld } from "../../test/x402/helpers/payment-world.js";
import { percentile } from "../report.js";

/** One method's whole paid requests: latency from the first request to the 200, and what landed on chain per payment. */
export interface PaidRequestResult {
  payments: number;
  p50Ms: number;
  p95Ms: number;
  /** Transactions that moved the payment's money, per payment. */
  transactions: number;
  /** Their gas, per payment (p50). */
  gasPerPayment: number;
  /** The agent's proof, and the rest of the request (402, trees, the seller's verify and settle, the blocks), p50. */
  proofP50Ms: number;
  restP50Ms: number;
  /** Each round's latency, in round order: the methods of one round started at the same point of a block. */
  timingsMs: number[];
}

/** A way a buyer pays a seller: one whole paid request, and the transactions that carried its money. */
interface PaymentMethod {
  pay: () => Promise<Response>;
  /** The agent's events (none for a plain buyer): its proofs and its settle-x402 answers. */
  events: AgentEvent[];
  transactionsOf: (response: Response, paymentEvents: AgentEvent[]) => string[];
}

export const PAID_REQUEST_METHODS = ["shieldedViaRoutes", "shieldedViaPackage", "detour", "plainViaRoutes", "plainViaReference"] as const;
export type PaidRequestMethod = (typeof PAID_REQUEST_METHODS)[number];

const sellerTransaction = (response: Response) => decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE")!).transaction;

/**
 * Buyers' whole paid requests, the first GET to the 200, on the chain's blocks as they come (interval mining is the
 * caller's), each method against a seller of the same code (x402-peers/seller.ts) that differs only in its
 * facilitator:
 * - shieldedViaRoutes / shieldedViaPackage: an agent pays by shielded proof; the seller's facilitator is the relayer's
 *   seller routes, or the reference @x402/core facilitator with the seller package's scheme (x402-privacy-seller/
 *   facilitator); the pool pays the seller in the relay;
 * - detour: the agent proves a settle-x402, the relayer funds a payer, the reference facilitator settles its
 *   authorization;
 * - plainViaRoutes / plainViaReference: a plain @x402/evm buyer's EIP-3009 payment, settled by the relayer's seller
 *   routes, or by the reference facilitator.
 * The methods are interleaved: each round draws one point in a block (0 to `blockMs` after a block is mined), and each
 * method, in an order rotated every round, starts at that point of a block of its own. So every method meets the same
 * block phases, and the machine's drift falls on all of them. Each buyer pays once first, untimed (its prover starts,
 * it reads the trees whole). An agent's change note is its next payment's; it pays again a round later, once the
 * indexer has read it.
 */
export async function measurePaidRequests(world: PaymentWorld, options: { payments: number; blockMs: number }) {
  const sellers = {
    shieldedViaRoutes: await world.startShieldedSeller({ facilitator: "relayer" }),
    shieldedViaPackage: await world.startShieldedSeller({ facilitator: "reference" }),
    plainViaRoutes: await world.startShieldedSeller({ facilitator: "relayer", offers: "eip3009" }),
  };
  try {
    const [alice, bob, carol] = Object.values(world.chain.depositors);
    const agentValue = 10_000_000n;
    const plainFunds = world.price * BigInt(options.payments + 1);
    const agents = { viaRoutes: await world.newAgent(alice!, agentValue), viaPackage: await world.newAgent(bob!, agentValue), viaPayer: await world.newAgent(carol!, agentValue) };
    const plain = { viaRoutes: await plainBuyer(world, plainFunds), viaReference: await plainBuyer(world, plainFunds) };
    const shielded = (agent: (typeof agents)["viaRoutes"], url: string): PaymentMethod => ({
      pay: () => agent.agent.fetch(url),
      events: agent.events,
      transactionsOf: (response) => [sellerTransaction(response)],
    });
    const plainPayment = (buyer: (typeof plain)["viaRoutes"], url: string): PaymentMethod => ({
      pay: () => buyer.fetch(url),
      events: [],
      transactionsOf: (response) => [sellerTransaction(response)],
    });
    const methods: Record<PaidRequestMethod, PaymentMethod> = {
      shieldedViaRoutes: shielded(agents.viaRoutes, sellers.shieldedViaRoutes.resourceUrl),
      shieldedViaPackage: shielded(agents.viaPackage, sellers.shieldedViaPackage.resourceUrl),
      detour: {
        pay: () => agents.viaPayer.agent.fetch(world.sellers.v2.resourceUrl),
        events: agents.viaPayer.events,
        transactionsOf: (response, paymentEvents) => {
          const settled = paymentEvents.flatMap((event) => (event.step === "settled" ? [event.answer as X402Settlement] : [])).at(-1)!;
          return [settled.fundingTxHash, sellerTransaction(response)];
        },
      },
      plainViaRoutes: plainPayment(plain.viaRoutes, sellers.plainViaRoutes.resourceUrl),
      plainViaReference: plainPayment(plain.viaReference, world.sellers.v2.resourceUrl),
    };
    const results = await world.whileIndexerFollows(() => interleaved(world, methods, options));
    return { blockMs: options.blockMs, ...results };
  } finally {
    await Promise.all(Object.values(sellers).map((seller) => seller.close()));
  }
}

/** Resolves just after the chain mines its next block (the in-process node, polled every 10 ms). */
async function nextBlock(world: PaymentWorld): Promise<void> {
  const blockNumber = () => world.chain.connection.provider.request({ method: "eth_blockNumber" });
  const current = await blockNumber();
  while ((await blockNumber()) === current) await sleep(10);
}

interface Measured {
  ms: number;
  proofMs: number;
  transactions: number;
  gas: number;
}

async function measureOne(world: PaymentWorld, method: PaymentMethod): Promise<Measured> {
  const from = method.events.length;
  const started = performance.now();
  const response = await method.pay();
  const ms = performance.now() - started;
  if (response.status !== 200) throw new Error(`a paid request answered ${response.status}: ${await response.text()}`);
  const paymentEvents = method.events.slice(from);
  const hashes = method.transactionsOf(response, paymentEvents);
  const receipts = await Promise.all(hashes.map((hash) => world.provider.getTransactionReceipt(hash)));
  return {
    ms,
    proofMs: paymentEvents.reduce((sum, event) => sum + ("proofTimeMs" in event ? event.proofTimeMs : 0), 0),
    transactions: hashes.length,
    gas: receipts.reduce((sum, receipt) => sum + Number(receipt!.gasUsed), 0),
  };
}

async function interleaved(world: PaymentWorld, methods: Record<PaidRequestMethod, PaymentMethod>, { payments, blockMs }: { payments: number; blockMs: number }) {
  for (const method of Object.values(methods)) await measureOne(world, method);
  const measured = Object.fromEntries(PAID_REQUEST_METHODS.map((name) => [name, [] as Measured[]])) as Record<PaidRequestMethod, Measured[]>;
  for (let round = 0; round < payments; round++) {
    const phaseMs = Math.random() * blockMs;
    const order = PAID_REQUEST_METHODS.map((_, i) => PAID_REQUEST_METHODS[(i + round) % PAID_REQUEST_METHODS.length]!);
    for (const name of order) {
      await nextBlock(world);
      await sleep(phaseMs);
      measured[name].push(await measureOne(world, methods[name]));
    }
  }
  const result = (runs: Measured[]): PaidRequestResult => ({
    payments: runs.length,
    p50Ms: Math.round(percentile(runs.map(({ ms }) => ms), 50)),
    p95Ms: Math.round(percentile(runs.map(({ ms }) => ms), 95)),
    transactions: runs.reduce((sum, run) => sum + run.transactions, 0) / runs.length,
    gasPerPayment: percentile(runs.map(({ gas }) => gas), 50),
    proofP50Ms: Math.round(percentile(runs.map(({ proofMs }) => proofMs), 50)),
    restP50Ms: Math.round(percentile(runs.map(({ ms, proofMs }) => ms - proofMs), 50)),
    timingsMs: runs.map(({ ms }) => Math.round(ms)),
  });
  const results = Object.fromEntries(PAID_REQUEST_METHODS.map((name) => [name, result(measured[name])])) as Record<PaidRequestMethod, PaidRequestResult>;
  /** The p50 of one method against another's, and the median of their differences round by round (same block phase). */
  const against = (method: PaidRequestMethod, baseline: PaidRequestMethod) => ({
    p50Ratio: Number((results[method].p50Ms / results[baseline].p50Ms).toFixed(3)),
    pairedMedianDiffMs: Math.round(percentile(measured[method].map(({ ms }, i) => ms - measured[baseline][i]!.ms), 50)),
  });
  return {
    methods: results,
    plainRoutesAgainstReference: against("plainViaRoutes", "plainViaReference"),
    shieldedRoutesAgainstPackage: against("shieldedViaRoutes", "shieldedViaPackage"),
    shieldedAgainstDetour: against("shieldedViaRoutes", "detour"),
  };
}
