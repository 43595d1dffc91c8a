// Latency of paid requests on a private tab (docs/design.md 13) as the agent sees it, request to 200, on the payment
// world's chain and blocks: an X402Agent with tabs on pays a seller running @x402/evm's batch-settlement unchanged. The
// first request opens the tab (the relayer's quote, the agent's proof of the deposit, the one relay that spends the
// note and deposits into the channel, then the first voucher); then `requests` sequential requests, and `burst`
// requests made at once (the agent sends a tab's requests in turn). No request after the first makes a proof or a
// transaction: the bench checks it, and that the seller's claims are what it served.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { PaymentWorld } from "../../test/x402/helpers/payment-world.js";
import { elapsedMs, percentile } from "../report.js";

const PRICE = 1_000n;

export interface TabLatency {
  price: string;
  /** The first request: the tab's opening (one relay), then its first voucher. */
  open: { ms: number; proofMs: number };
  sequential: { requests: number; p50Ms: number; p95Ms: number };
  burst: { requests: number; p50Ms: number; p95Ms: number };
  /** The pool's relays and the agent's proofs for the whole tab: one each. */
  relays: number;
  proofs: number;
}

const summary = (timings: number[]) => ({ requests: timings.length, p50Ms: Math.round(percentile(timings, 50)), p95Ms: Math.round(percentile(timings, 95)) });

export async function measureTabLatency(world: PaymentWorld, { requests, burst }: { requests: number; burst: number }): Promise<TabLatency> {
  const seller = await world.startTabSeller({ price: PRICE });
  try {
    // The SDK's default deposit (1 USDC): a thousand requests at this price.
    const tabs = { channelDirectory: mkdtempSync(path.join(tmpdir(), "bench-tabs-")) };
    const { agent, events } = await world.newAgent(world.chain.depositors.dave, 10_000_000n, { custody: "non-custodial", tabs });
    const { privacyPool } = world.chain.facilitator;
    const relayCount = async () => (await privacyPool.queryFilter(privacyPool.filters.Withdrawn())).length;
    const relaysBefore = await relayCount();
    const paid = async () => {
      const response = await agent.fetch(seller.resourceUrl);
      if (response.status !== 200) throw new Error(`a paid request on the tab was answered ${response.status}: ${await response.text()}`);
      await response.arrayBuffer();
    };
    return await world.whileIndexerFollows(async () => {
      const openMs = await elapsedMs(paid);
      const sequential: number[] = [];
      for (let i = 0; i < requests; i++) sequential.push(await elapsedMs(paid));
      const burstTimings = await Promise.all(Array.from({ length: burst }, () => elapsedMs(paid)));

      const proofs = events.flatMap((event) => (event.step === "proved" ? [event.proofTimeMs] : []));
      const relays = (await relayCount()) - relaysBefore;
      const served = 1 + requests + burst;
      if (seller.served() !== served || relays !== 1 || proofs.length !== 1) {
        throw new Error(`the tab served ${seller.served()} of ${served} requests for ${relays} relays and ${proofs.length} proofs, not one each`);
      }
      await seller.channels.claimAndSettle();
      const earned = await world.usdcBalance(seller.payTo);
      if (earned !== BigInt(served) * PRICE) throw new Error(`the seller claimed ${earned}, not the ${BigInt(served) * PRICE} it served`);
      return {
        price: PRICE.toString(),
        open: { ms: Math.round(openMs), proofMs: Math.round(proofs[0]!) },
        sequential: summary(sequential),
        burst: summary(burstTimings),
        relays,
        proofs: proofs.length,
      };
    });
  } finally {
    await seller.close();
  }
}
