import { setTimeout as sleep } from "node:timers/promises";
import { decodePaymentResponseHeader } from "@x402/fetch";
import type { Provider } from "ethers";
import type { AgentEvent, X402Settlement } from "../../sdk/agent/index.js";
import type { PaymentWorld } from "../../test/x402/helpers/payment-world.js";
import { elapsedMs, percentile } from "../report.js";

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
}

/**
 * An agent's whole paid request, the first GET to the 200, on the chain's blocks as they come (interval mining is the
 * caller's): by shielded proof (a seller whose facilitator is the relayer's seller routes: the pool pays it in the
 * relay) and by the detour (settle-x402 proven by the agent, then the seller's reference facilitator settles the
 * payer's authorization). Each agent makes one payment first, untimed (its prover starts, it reads the trees whole),
 * waits a random 0 to `blockMs` before each payment, so that payments start anywhere in a block, and lets the indexer
 * read its change note before the next (neither wait is timed).
 */
export async function measurePaidRequests(world: PaymentWorld, options: { payments: number; blockMs: number }) {
  const shieldedSeller = await world.startShieldedSeller({ facilitator: "relayer" });
  try {
    const depositors = Object.values(world.chain.depositors);
    const [shielded, viaPayer] = [await world.newAgent(depositors[0]!, 10_000_000n), await world.newAgent(depositors[1]!, 10_000_000n)];
    const direct = await world.whileIndexerFollows(async () => {
      const { agent, events } = shielded;
      return timedPayments(world.provider, options, () => agent.fetch(shieldedSeller.resourceUrl), events, (response) => {
        const settled = decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE")!);
        return [settled.transaction];
      });
    });
    const detour = await world.whileIndexerFollows(async () => {
      const { agent, events } = viaPayer;
      return timedPayments(world.provider, options, () => agent.fetch(world.sellers.v2.resourceUrl), events, (response, paymentEvents) => {
        const settled = paymentEvents.flatMap((event) => (event.step === "settled" ? [event.answer as X402Settlement] : [])).at(-1)!;
        return [settled.fundingTxHash, decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE")!).transaction];
      });
    });
    return { blockMs: options.blockMs, direct, detour };
  } finally {
    await shieldedSeller.close();
  }
}

async function timedPayments(
  provider: Provider,
  { payments, blockMs }: { payments: number; blockMs: number },
  pay: () => Promise<Response>,
  events: AgentEvent[],
  transactionsOf: (response: Response, paymentEvents: AgentEvent[]) => string[],
): Promise<PaidRequestResult> {
  const ms: number[] = [];
  const proofMs: number[] = [];
  const gas: number[] = [];
  let transactions = 0;
  // A warm-up, left out: the agent's first payment reads `supported`, starts its prover and fetches the trees whole.
  await pay();
  await sleep(300);
  for (let i = 0; i < payments; i++) {
    await sleep(Math.random() * blockMs);
    const from = events.length;
    let response!: Response;
    ms.push(await elapsedMs(async () => {
      response = await pay();
    }));
    if (response.status !== 200) throw new Error(`a paid request answered ${response.status}`);
    const paymentEvents = events.slice(from);
    proofMs.push(paymentEvents.reduce((sum, event) => sum + ("proofTimeMs" in event ? event.proofTimeMs : 0), 0));
    const hashes = transactionsOf(response, paymentEvents);
    transactions += hashes.length;
    const receipts = await Promise.all(hashes.map((hash) => provider.getTransactionReceipt(hash)));
    gas.push(receipts.reduce((sum, receipt) => sum + Number(receipt!.gasUsed), 0));
    // The change note is the next payment's: the indexer reads it from the block its relay was mined in.
    await sleep(300);
  }
  return {
    payments,
    p50Ms: Math.round(percentile(ms, 50)),
    p95Ms: Math.round(percentile(ms, 95)),
    transactions: transactions / payments,
    gasPerPayment: percentile(gas, 50),
    proofP50Ms: Math.round(percentile(proofMs, 50)),
    restP50Ms: Math.round(percentile(ms.map((total, i) => total - proofMs[i]!), 50)),
  };
}
