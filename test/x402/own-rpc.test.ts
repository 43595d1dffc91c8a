import { expect } from "chai";
import { Wallet } from "ethers";
import type { AgentEvent } from "../../sdk/agent/index.js";
import { FacilitatorClient, type QuoteAnswer, type TreeAnswer } from "../../sdk/client/facilitator-client.js";
import { createLeanIMT, nullifierHashOf, packLeaves, unpackLeaves } from "../../sdk/index.js";
import { rejectionOf } from "../sdk/agent/helpers/rejection.js";
import { deposit as depositInPool } from "../indexer/helpers/pool-actions.js";
import { startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";
import { startRecordingProxy, type RecordingProxy } from "./helpers/recording-proxy.js";

type Operator = RecordingProxy & { readLeaves: () => Promise<void> };

/**
 * An operator that serves `tree` (the state tree, or the ASP tree) `behind()` leaves short of what it has, each time it
 * is asked (its trees answers and, with `quotes`, its quotes): every tree it names is one the pool really had, so
 * nothing but its age gives it away. `readLeaves` takes in the pool's leaves as they are now (the proxy's rewrite is
 * synchronous).
 */
async function olderTreesOperator(
  world: PaymentWorld,
  behind: () => number,
  { trees = true, quotes = true, tree = "state" }: { trees?: boolean; quotes?: boolean; tree?: "state" | "asp" } = {},
): Promise<Operator> {
  let leaves: bigint[] = [];
  const olderTree = (size: number) => {
    const older = createLeanIMT(leaves.slice(0, size));
    return { root: size === 0 ? "0" : older.root.toString(), depth: older.depth, size };
  };
  const quoted = tree === "state" ? (["stateRoot", "stateTreeDepth", "stateTreeSize"] as const) : (["aspRoot", "aspTreeDepth", "aspTreeSize"] as const);
  const proxy = await startRecordingProxy(world.relayer.url, (path, answer) => {
    const by = behind();
    if (by === 0) return answer;
    if (trees && path === "/api/facilitator/trees") {
      const served = answer[tree] as TreeAnswer;
      const kept = Math.max(served.from, served.size - by);
      return { ...answer, [tree]: { ...olderTree(kept), from: served.from, leaves: packLeaves(leaves.slice(served.from, kept)) } };
    }
    if (quotes && path === "/api/facilitator/quote-x402") {
      const quote = answer.quote as QuoteAnswer;
      const older = olderTree(quote[quoted[2]] - by);
      return { ...answer, quote: { ...quote, [quoted[0]]: older.root, [quoted[1]]: older.depth, [quoted[2]]: older.size } };
    }
    return answer;
  });
  return Object.assign(proxy, {
    readLeaves: async () => {
      leaves = unpackLeaves((await world.indexer.client.treeLeaves())[tree].leaves);
    },
  });
}

describe("the agent checks its roots against its own RPC: no operator can single out its note by serving older trees", function () {
  let world: PaymentWorld;
  let privacyPool: string;

  before(async function () {
    world = await startPaymentWorld();
    privacyPool = await world.chain.facilitator.privacyPool.getAddress();
  });
  after(async function () {
    await world?.close();
  });

  /** An agent whose note is followed by `after` other deposits: the typical first payment after approval. */
  async function agentFollowedBy(after: number, facilitatorUrl: string, own: boolean, tagBase: number) {
    const made = await world.newAgent(world.chain.depositors.alice, 1_000_000n, {
      facilitator: new FacilitatorClient(facilitatorUrl),
      ...(own && { ownRpc: { url: world.chain.rpc.url, privacyPool } }),
    });
    for (let i = 0; i < after; i++) await depositInPool(world.chain, world.chain.depositors.erin, tagBase + i);
    await world.syncIndexer();
    return made;
  }

  const chainSize = async () => Number(await world.chain.facilitator.privacyPool.currentTreeSize());
  const quotesOf = (proxy: RecordingProxy) => proxy.requests.filter((request) => request.url === "/api/facilitator/quote-x402");
  const nullifierNamed = (proxy: RecordingProxy, nullifierHash: bigint) =>
    proxy.requests.filter((request) => `${request.url}\n${request.body}`.includes(nullifierHash.toString()));

  it("an operator serving older trees one step at a time: the agent waits them out without naming its note, then proves against the chain's newest tree with one quote", async function () {
    let behind = 3;
    // Each trees answer one leaf closer to the chain's tree: S-3, S-2, S-1, then S.
    const operator = await olderTreesOperator(world, () => behind, { quotes: false });
    try {
      const { agent, deposit } = await agentFollowedBy(3, operator.url, true, 7100);
      await operator.readLeaves();
      const seen = await chainSize();
      const stepDown = setInterval(() => (behind = Math.max(0, behind - 1)), 600);
      let response: Response;
      try {
        response = await agent.fetch(world.sellers.v2.resourceUrl);
      } finally {
        clearInterval(stepDown);
      }
      expect(response.status).to.equal(200);

      const named = nullifierNamed(operator, nullifierHashOf(deposit.note.nullifier));
      expect(named.map((request) => request.url)).to.deep.equal(["/api/facilitator/quote-x402", "/api/facilitator/settle-x402-proof"]);
      // Every trees answer before the quote was asked without the note; the older ones were refused, not used.
      const firstNaming = operator.requests.indexOf(named[0]!);
      const treesBefore = operator.requests.slice(0, firstNaming).filter((request) => request.url.startsWith("/api/facilitator/trees"));
      expect(treesBefore.length).to.be.greaterThan(1);
      const settled = JSON.parse(named[1]!.body) as { quote: QuoteAnswer };
      expect(settled.quote.stateTreeSize).to.be.at.least(seen);
    } finally {
      await operator.close();
    }
  });

  it("refuses a quote of an older tree than its own RPC shows: ROOTS_STALE naming both, nothing proven or spent, no second quote under that nullifier", async function () {
    const operator = await olderTreesOperator(world, () => 2, { trees: false });
    try {
      const { agent, vault, deposit, events } = await agentFollowedBy(2, operator.url, true, 7200);
      await operator.readLeaves();
      const seen = await chainSize();
      const poolBefore = await world.poolBalance();

      const refused = await rejectionOf(agent.fetch(world.sellers.v2.resourceUrl));
      expect(refused).to.have.property("code", "ROOTS_STALE");
      expect(refused.message).to.contain(`a state tree of ${seen - 2} leaves`).and.to.contain(`read ${seen} leaves`);
      expect(quotesOf(operator)).to.have.length(1);
      expect(operator.requests.map((request) => request.url)).to.not.include("/api/facilitator/settle-x402-proof");
      expect(events.map((event: AgentEvent) => event.step)).to.not.include("proved");
      expect(await world.poolBalance()).to.equal(poolBefore);
      expect(await world.unspentNotes(vault)).to.deep.equal([deposit.note]);
    } finally {
      await operator.close();
    }
  });

  it("refuses a quote of an older ASP root than its own RPC shows, one that still holds its label: ROOTS_STALE, nothing spent, no second quote", async function () {
    const operator = await olderTreesOperator(world, () => 2, { trees: false, tree: "asp" });
    try {
      const { agent, vault, deposit } = await agentFollowedBy(2, operator.url, true, 7500);
      await operator.readLeaves();
      const latestAspRoot = await world.chain.facilitator.entrypoint.latestRoot();
      const refused = await rejectionOf(agent.fetch(world.sellers.v2.resourceUrl));
      expect(refused).to.have.property("code", "ROOTS_STALE");
      expect(refused.message).to.contain(`ASP root ${latestAspRoot}`);
      expect(quotesOf(operator)).to.have.length(1);
      expect(await world.unspentNotes(vault)).to.deep.equal([deposit.note]);
    } finally {
      await operator.close();
    }
  });

  it("without its own RPC, refuses a quote of a smaller tree than the operator served it a moment before, and asks no second quote", async function () {
    const operator = await olderTreesOperator(world, () => 1, { trees: false });
    try {
      const { agent, vault, deposit } = await agentFollowedBy(1, operator.url, false, 7300);
      await operator.readLeaves();
      const refused = await rejectionOf(agent.fetch(world.sellers.v2.resourceUrl));
      expect(refused).to.have.property("code", "ROOTS_STALE");
      expect(refused.message).to.contain("fewer than");
      expect(quotesOf(operator)).to.have.length(1);
      expect(await world.unspentNotes(vault)).to.deep.equal([deposit.note]);
    } finally {
      await operator.close();
    }
  });

  it("a tree server behind a shielded-proof seller that serves only older trees: the agent refuses them, sends the seller nothing and keeps its note", async function () {
    this.timeout(60_000);
    const operator = await olderTreesOperator(world, () => 2);
    const seller = await world.startShieldedSeller({ facilitator: "relayer" });
    try {
      const { agent, vault, deposit } = await agentFollowedBy(2, operator.url, true, 7400);
      await operator.readLeaves();
      const before = await world.usdcBalance(seller.payTo);
      const refused = await rejectionOf(agent.fetch(seller.resourceUrl));
      expect(refused).to.have.property("code", "ROOTS_STALE");
      expect(await world.usdcBalance(seller.payTo)).to.equal(before);
      expect(await world.unspentNotes(vault)).to.deep.equal([deposit.note]);
      expect(nullifierNamed(operator, nullifierHashOf(deposit.note.nullifier))).to.deep.equal([]);
    } finally {
      await seller.close();
      await operator.close();
    }
  });

  it("refuses a facilitator that names another pool than the agent's own RPC (POOL_MISMATCH), and an RPC that cannot read the pool, naming the note to neither", async function () {
    const elsewhere = Wallet.createRandom().address;
    const misleading = await startRecordingProxy(world.relayer.url, (path, answer) =>
      path === "/api/facilitator/supported" ? { ...answer, contracts: { ...(answer.contracts as object), privacyPool: elsewhere } } : answer,
    );
    try {
      const { agent, vault, deposit } = await world.newAgent(world.chain.depositors.bob, 1_000_000n, {
        facilitator: new FacilitatorClient(misleading.url),
        ownRpc: { url: world.chain.rpc.url, privacyPool },
      });
      const refused = await rejectionOf(agent.fetch(world.sellers.v2.resourceUrl));
      expect(refused).to.have.property("code", "POOL_MISMATCH");
      expect(refused.message).to.contain(elsewhere).and.to.contain(privacyPool);
      expect(nullifierNamed(misleading, nullifierHashOf(deposit.note.nullifier))).to.deep.equal([]);
      expect(await world.unspentNotes(vault)).to.deep.equal([deposit.note]);

      // An RPC that answers, but not for this pool (no contract there): nothing is proven on unread roots.
      const unread = await world.newAgent(world.chain.depositors.bob, 1_000_000n, { ownRpc: { url: world.chain.rpc.url, privacyPool: elsewhere } });
      expect(await rejectionOf(unread.agent.fetch(world.sellers.v2.resourceUrl))).to.have.property("code", "OWN_RPC_UNAVAILABLE");
      expect(await world.unspentNotes(unread.vault)).to.deep.equal([unread.deposit.note]);
    } finally {
      await misleading.close();
    }
  });
});
