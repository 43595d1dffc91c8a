// Latency of paid requests on a private tab (docs/design.md 13) as the agent sees it, request to 200: `requests`
// sequential requests after the tab's first (the deposit's), then `burst` requests made at once on the same tab, sent
// in turn (inTurn). @x402/evm's seller, facilitator and client, unchanged, on our contract peer; blocks at the wall
// clock. No request after the first makes a proof or a transaction.
import { elapsedMs, percentile } from "../report.js";
import { inTurn, startTabWorld } from "../../test/x402/helpers/private-tab-world.js";

const PRICE = 1_000n;

export interface TabLatency {
  sequential: { requests: number; p50Ms: number; p95Ms: number };
  burst: { requests: number; p50Ms: number; p95Ms: number };
  /** Blocks mined while the requests after the first were paid: none. */
  blocks: number;
}

const summary = (timings: number[]) => ({ requests: timings.length, p50Ms: Math.round(percentile(timings, 50)), p95Ms: Math.round(percentile(timings, 95)) });

export async function measureTabLatency({ requests, burst }: { requests: number; burst: number }): Promise<TabLatency> {
  const world = await startTabWorld({ price: PRICE, wallClockBlocks: true });
  try {
    const tab = await world.openTab({ deposit: PRICE * BigInt(requests + burst + 1) });
    const { provider } = world.chain.connection.ethers;
    const blockBefore = await provider.getBlockNumber();
    const paid = async (fetchPaid: typeof tab.fetchPaid) => {
      const response = await fetchPaid(world.seller.resourceUrl);
      if (response.status !== 200) throw new Error(`a paid request on the tab was answered ${response.status}: ${await response.text()}`);
      await response.arrayBuffer();
    };
    const sequential: number[] = [];
    for (let i = 0; i < requests; i++) sequential.push(await elapsedMs(() => paid(tab.fetchPaid)));
    const fetchInTurn = inTurn(tab.fetchPaid);
    const burstTimings = await Promise.all(Array.from({ length: burst }, () => elapsedMs(() => paid(fetchInTurn))));
    return { sequential: summary(sequential), burst: summary(burstTimings), blocks: (await provider.getBlockNumber()) - blockBefore };
  } finally {
    await world.close();
  }
}
