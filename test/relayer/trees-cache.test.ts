import { expect } from "chai";
import { seedPool } from "../../bench/settle/seeded-pool.js";
import { INDEXER_ROUTES, type TreeLeavesQuery } from "../../indexer/api.js";
import { createLeanIMT, packLeaves, unpackLeaves, type Note } from "../../sdk/index.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import {
  buildIndexerConfig,
  rewriteScreeningList,
  startIndexer,
  writeScreeningLists,
  type RunningIndexer,
  type ScreeningFiles,
} from "../indexer/helpers/indexer-harness.js";
import { startLocalChain } from "../indexer/helpers/local-chain.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { PACED_MIN_BYTES } from "../../relayer/http/trees-pacing.js";
import { TreesCache } from "../../relayer/trees/trees-cache.js";
import { buildRelayerConfig, startRelayer, type RunningRelayer } from "./helpers/relayer-harness.js";

const TREES = "/api/facilitator/trees";

interface ServedTree {
  root: string;
  depth: number;
  size: number;
  from: number;
  leaves: string;
}
type ServedTrees = { state: ServedTree; asp: ServedTree };

/** A tree-leaves request the relayer made to the indexer, and the indexer's answer (when it succeeded). */
interface IndexerRequest {
  query: Record<string, string>;
  answer?: ServedTrees;
}

/**
 * Watches the relayer's tree-leaves requests to the indexer at `origin` through the global fetch its IndexerClient
 * calls. `hold` keeps answers back from the relayer until a promise settles: the indexer has answered, the relayer
 * does not know it yet.
 */
function watchTreeLeavesRequests(origin: string) {
  const requests: IndexerRequest[] = [];
  let held: Promise<void> | undefined;
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const response = await realFetch(input, init);
    const url = new URL(input instanceof Request ? input.url : input);
    if (url.origin !== origin || url.pathname !== INDEXER_ROUTES.treeLeaves) return response;
    const answer = response.ok ? ((await response.clone().json()) as ServedTrees) : undefined;
    requests.push({ query: Object.fromEntries(url.searchParams), answer });
    await held;
    return response;
  };
  return {
    requests,
    hold: (until: Promise<void> | undefined) => void (held = until),
    restore: () => void (globalThis.fetch = realFetch),
  };
}

const queryString = (query: Partial<TreeLeavesQuery>) => new URLSearchParams(Object.entries(query).map(([name, value]): [string, string] => [name, String(value)])).toString();

const chain = await startLocalChain();
const { privacyPool, entrypoint } = chain.facilitator;
const { networkHelpers } = chain.connection;
const { alice, bob, carol, dave, erin } = chain.depositors;

describe("relayer: the trees route answers from its cache of the indexer's trees", function () {
  let lists: ScreeningFiles;
  let indexer: RunningIndexer;
  let indexerProxy: TcpProxy;
  let relayer: RunningRelayer;
  let watch: ReturnType<typeof watchTreeLeavesRequests>;

  /**
   * The indexer (on a pool seeded with `seeded` leaves, bench/settle/seeded-pool.ts) and the relayer, which reaches it
   * through a proxy; `relayerConfig` overrides the relayer's.
   */
  const start = async (seeded = 0, relayerConfig: Record<string, string> = {}) => {
    lists = writeScreeningLists();
    const config = buildIndexerConfig(chain, lists);
    if (seeded > 0) await seedPool(chain, config, seeded);
    indexer = await startIndexer(config);
    indexerProxy = await startTcpProxy(indexer.url);
    relayer = await startRelayer(buildRelayerConfig(chain, { ...indexer, url: indexerProxy.url }, relayerConfig));
    watch = watchTreeLeavesRequests(new URL(indexerProxy.url).origin);
  };

  beforeEach(async function () {
    await chain.reset();
  });
  afterEach(async function () {
    watch?.restore();
    await relayer?.stop();
    await indexerProxy?.cut();
    await indexer?.stop();
  });
  after(async function () {
    await chain.close();
  });

  /** Follows the chain and publishes the ASP root, as the indexer's follow loop does. */
  const syncAndPublish = async () => {
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
  };
  const deposits = async (...depositors: [typeof alice, number][]): Promise<Note[]> => {
    const notes: Note[] = [];
    for (const [depositor, tag] of depositors) notes.push(await deposit(chain, depositor, tag));
    return notes;
  };

  /** The relayer's answer to a trees request (checked against its OpenAPI document). */
  const served = async (query: Partial<TreeLeavesQuery> = {}): Promise<ServedTrees> => {
    const { status, body } = await relayer.request(`${TREES}?${queryString(query)}`);
    expect(status, JSON.stringify(body)).to.equal(200);
    return body as unknown as ServedTrees;
  };
  /** The relayer answers `query` as the indexer's own route does now. */
  const expectServedAsIndexer = async (query: Partial<TreeLeavesQuery>) => {
    const direct = JSON.parse(Buffer.from(await indexer.client.treeLeavesJson(query)).toString("utf8")) as ServedTrees;
    expect(await served(query), queryString(query)).to.deep.equal(direct);
  };
  /** The whole trees the relayer serves have the chain's roots, and their leaves make those roots. */
  const expectWholeTreesOfChain = async () => {
    const { state, asp } = await served();
    expect(state).to.deep.include({ from: 0, root: String(await privacyPool.currentRoot()) });
    expect(asp).to.deep.include({ from: 0, root: String(await entrypoint.latestRoot()) });
    for (const tree of [state, asp]) expect(String(createLeanIMT(unpackLeaves(tree.leaves)).root), "root of the leaves served").to.equal(tree.root);
    return { state, asp };
  };
  /** Waits until `condition` holds (polled), or fails. */
  const until = async (condition: () => boolean, what: string) => {
    for (let tries = 0; !condition(); tries++) {
      if (tries === 200) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  it("answers as the indexer from 0, inside the trees, at their end and past it, with a root right or wrong, and then asks only for new leaves", async function () {
    await start();
    await deposits([alice, 1], [bob, 2], [carol, 3], [dave, 4], [erin, 5]);
    await syncAndPublish();
    const { state, asp } = await expectWholeTreesOfChain();
    expect(watch.requests.map(({ query }) => query)).to.deep.equal([{ stateFrom: "0", stateFromRoot: "0", aspFrom: "0", aspFromRoot: "0" }]);
    const stateLeaves = unpackLeaves(state.leaves);
    const innerRoot = createLeanIMT(stateLeaves.slice(0, 3)).root;
    for (const query of [
      { stateFrom: 2, aspFrom: 5 },
      { stateFrom: 5, aspFrom: 2 },
      { stateFrom: 9, aspFrom: 6 },
      { stateFrom: 5, stateFromRoot: BigInt(state.root), aspFrom: 5, aspFromRoot: BigInt(asp.root) },
      { stateFrom: 5, stateFromRoot: BigInt(state.root) + 1n, aspFrom: 5, aspFromRoot: BigInt(asp.root) },
      { stateFrom: 3, stateFromRoot: innerRoot, aspFrom: 0, aspFromRoot: 7n },
      { stateFrom: 3, stateFromRoot: innerRoot - 1n, aspFrom: 9, aspFromRoot: BigInt(asp.root) },
    ]) {
      await expectServedAsIndexer(query);
    }

    watch.requests.length = 0;
    const later = await deposits([alice, 6], [bob, 7]);
    await syncAndPublish();
    const after = await expectWholeTreesOfChain();
    expect(after.state.leaves).to.equal(packLeaves([...stateLeaves, ...later.map(({ commitment }) => commitment)]));
    expect(await served({ stateFrom: 7, aspFrom: 7 })).to.deep.include({ state: { ...after.state, from: 7, leaves: "" } });
    // One request each, for the leaves after those held, naming the roots they make: 2 new leaves, then none.
    expect(watch.requests.map(({ query }) => query)).to.deep.equal([
      { stateFrom: "5", stateFromRoot: state.root, aspFrom: "5", aspFromRoot: asp.root },
      { stateFrom: "7", stateFromRoot: after.state.root, aspFrom: "7", aspFromRoot: after.asp.root },
    ]);
    expect(watch.requests.map(({ answer }) => [answer!.state.from, answer!.state.leaves.length / 64, answer!.asp.from, answer!.asp.leaves.length / 64])).to.deep.equal([
      [5, 2, 5, 2],
      [7, 0, 7, 0],
    ]);
  });

  it("sends a whole answer too large to join as the slices of its cache, with its length, as the indexer's", async function () {
    await start(1_500);
    await deposits([alice, 1]);
    await syncAndPublish();
    const response = await fetch(`${relayer.url}${TREES}`);
    const text = await response.text();
    expect(Number(response.headers.get("content-length"))).to.equal(Buffer.byteLength(text)).and.above(2 * 1_500 * 64);
    expect(JSON.parse(text)).to.deep.equal(JSON.parse(Buffer.from(await indexer.client.treeLeavesJson()).toString("utf8")));
    expect((await expectWholeTreesOfChain()).state.size).to.equal(1_501);

    await deposits([bob, 2]);
    await syncAndPublish();
    await expectServedAsIndexer({ stateFrom: 700, aspFrom: 0 });
    expect(watch.requests.at(-1)!.answer!.state).to.deep.include({ from: 1_501, size: 1_502 });
  });

  it("after an ASP revocation that rebuilt the ASP tree and regrew it past the leaves held, serves the new tree from 0, never on the stale prefix", async function () {
    await start();
    const [kept, revoked, alsoKept] = await deposits([alice, 1], [bob, 2], [carol, 3]);
    await syncAndPublish();
    const before = await served();
    expect(before.asp.size).to.equal(3);

    rewriteScreeningList(lists.overlayList, [bob.address], "bridge exploit, 2025");
    await indexer.indexer.curator.reloadLists();
    const later = await deposits([dave, 4], [erin, 5]);
    await syncAndPublish();
    const rebuilt = [kept!, alsoKept!, ...later].map(({ label }) => label);
    expect(rebuilt).to.not.include(revoked!.label);

    watch.requests.length = 0;
    const { asp } = await expectWholeTreesOfChain();
    expect(unpackLeaves(asp.leaves)).to.deep.equal(rebuilt);
    expect(watch.requests.map(({ answer }) => [answer!.state.from, answer!.asp.from])).to.deep.equal([[3, 0]]);
    // An agent holding the old tree: named by its root, from 0 (the indexer checks a root inside the tree); by size, as the indexer.
    await expectServedAsIndexer({ aspFrom: 3, aspFromRoot: BigInt(before.asp.root) });
    expect((await served({ aspFrom: 3, aspFromRoot: BigInt(before.asp.root) })).asp).to.deep.include({ from: 0, leaves: asp.leaves });
    await expectServedAsIndexer({ aspFrom: 3 });
    // An agent holding the new tree, named by its root: answered from the cache alone.
    watch.requests.length = 0;
    expect((await served({ stateFrom: 5, aspFrom: 4, aspFromRoot: BigInt(asp.root) })).asp).to.deep.include({ from: 4, leaves: "" });
    expect(watch.requests.map(({ query }) => query.aspFrom)).to.deep.equal(["4"]);
  });

  it("after a reorg that rebuilt the state tree and regrew it past the leaves held, serves the new tree from 0, never on the stale prefix", async function () {
    await start();
    const [first] = await deposits([alice, 1]);
    const fork = await networkHelpers.takeSnapshot();
    await deposits([bob, 2], [bob, 3]);
    await syncAndPublish();
    const before = await served();
    expect(before.state.size).to.equal(3);

    await fork.restore();
    const replacing = await deposits([carol, 4], [dave, 5], [erin, 6]);
    await syncAndPublish();

    watch.requests.length = 0;
    const { state } = await expectWholeTreesOfChain();
    expect(unpackLeaves(state.leaves)).to.deep.equal([first!, ...replacing].map(({ commitment }) => commitment));
    expect(watch.requests.map(({ answer }) => answer!.state.from)).to.deep.equal([0]);
    await expectServedAsIndexer({ stateFrom: 3, stateFromRoot: BigInt(before.state.root), aspFrom: 1 });
  });

  it("answers many requests at once naming wrong roots inside the trees from its copy, from 0: the indexer is asked what one cached answer asks, and the budget refuses before anything is fetched", async function () {
    // Whole trees past PACED_MIN_BYTES, and a budget that lets about ten of them leave in the most a request may wait.
    await start(4_200, { treesBytesPerSecond: "300000" });
    await deposits([alice, 1], [bob, 2]);
    await syncAndPublish();
    const whole = await served();
    expect(JSON.stringify(whole).length).to.be.above(PACED_MIN_BYTES);
    watch.requests.length = 0;

    const wrong = queryString({ stateFrom: 1, stateFromRoot: 12_345n, aspFrom: 1, aspFromRoot: 12_345n });
    // The indexer's first answer is held until every request has arrived, as under a flood: they all meet at the cache.
    let release!: () => void;
    watch.hold(new Promise<void>((resolve) => (release = resolve)));
    let answered = 0;
    const answering = Array.from({ length: 30 }, () => relayer.request(`${TREES}?${wrong}`).finally(() => answered++));
    await until(() => watch.requests.length === 1 && relayer.relayer.inFlight.count + answered === 30, "the requests to arrive");
    await new Promise((resolve) => setTimeout(resolve, 200)); // past the middleware, to the cache
    release();
    watch.hold(undefined);
    const answers = await Promise.all(answering);

    const statuses = answers.map(({ status }) => status);
    expect(statuses.filter((status) => status === 200).length, statuses.join(",")).to.be.at.least(1);
    expect(statuses.filter((status) => status === 429).length, statuses.join(",")).to.be.at.least(1);
    for (const { status, body } of answers) {
      if (status === 200) expect(body).to.deep.equal(whole); // rebuilt for all the relayer can tell: from 0
      else expect(body).to.deep.include({ code: "RATE_LIMITED" });
    }
    // At most one indexer request under way and one queued behind it, each for the leaves after the copy's (none
    // new): no whole tree was pulled from the indexer, whatever the requests named.
    expect(watch.requests.length).to.be.at.most(2);
    for (const { query, answer } of watch.requests) {
      expect(query).to.deep.include({ stateFrom: String(whole.state.size), aspFrom: String(whole.asp.size) });
      expect([answer!.state.leaves, answer!.asp.leaves]).to.deep.equal(["", ""]);
    }
  });

  it("shares one indexer request among the trees requests that arrive while one is under way, and answers them with trees at least as new as it", async function () {
    await start();
    await deposits([alice, 1], [bob, 2]);
    await syncAndPublish();
    await served();
    watch.requests.length = 0;

    let release!: () => void;
    watch.hold(new Promise<void>((resolve) => (release = resolve)));
    const first = served();
    await until(() => watch.requests.length === 1, "the first indexer request");
    // A deposit the first indexer answer does not hold, made before the next requests arrive.
    const [third] = await deposits([carol, 3]);
    await syncAndPublish();
    const next = Array.from({ length: 6 }, () => served());
    await until(() => relayer.relayer.inFlight.count === 7, "the requests to arrive");
    await new Promise((resolve) => setTimeout(resolve, 100)); // past the middleware, to the cache
    release();
    watch.hold(undefined);

    expect((await first).state.size, "the first request's answer, begun before the deposit").to.equal(2);
    for (const answer of await Promise.all(next)) {
      expect(answer.state).to.deep.include({ size: 3, from: 0 });
      expect(unpackLeaves(answer.state.leaves).at(-1)).to.equal(third!.commitment);
    }
    expect(watch.requests.map(({ query }) => query.stateFrom)).to.deep.equal(["2", "2"]);
  });

  it("answers the indexer's failures as before: cold, no ASP root on chain, unreachable; and serves again once it is back", async function () {
    await start();
    await deposits([alice, 1]);
    const refused = async (code: string, status: number) => {
      const answer = await relayer.request(TREES);
      expect(answer.status, JSON.stringify(answer.body)).to.equal(status);
      expect(answer.body.code).to.equal(code);
    };
    await refused("INDEXER_COLD", 503);
    await indexer.indexer.sync.catchUp();
    await refused("INVALID_PROOF", 422); // the ASP root holding the label is not on chain yet
    await syncAndPublish();
    await expectWholeTreesOfChain();

    await deposits([bob, 2]);
    await syncAndPublish();
    await indexerProxy.cut();
    try {
      await refused("INDEXER_UNAVAILABLE", 503);
    } finally {
      await indexerProxy.restore();
    }
    expect((await expectWholeTreesOfChain()).state.size).to.equal(2);
  });
});

describe("TreesCache: the bytes of an answer being sent", function () {
  /** An indexer's answers, one per refresh, in order: the trees as they stand at each. */
  function indexerAnswering(states: bigint[][]) {
    let refresh = 0;
    const treeOf = (leaves: bigint[]) => ({ root: leaves.length === 0 ? 0n : createLeanIMT(leaves).root, depth: leaves.length <= 1 ? 0 : createLeanIMT(leaves).depth, size: leaves.length, from: 0, leaves: packLeaves(leaves) });
    return {
      treeLeaves: async () => {
        const state = states[Math.min(refresh++, states.length - 1)]!;
        return { state: treeOf(state), asp: treeOf([]) };
      },
      treeLeavesJson: async (): Promise<Uint8Array> => {
        throw new Error("not asked in this test");
      },
    };
  }
  const whole: TreeLeavesQuery = { stateFrom: 0, aspFrom: 0 };
  const text = (parts: Buffer[]) => Buffer.concat(parts).toString("latin1");

  it("keeps them when the tree is rebuilt, emptied first and regrown: bytes an answer may still read are never written again", async function () {
    const before = [11n, 12n, 13n];
    const after = [21n, 22n, 23n];
    const cache = new TreesCache(indexerAnswering([before, [], after]));
    const sending = await cache.answer(whole);
    const sent = text(sending.parts);
    expect(sent).to.contain(packLeaves(before));
    await cache.answer(whole); // the tree emptied
    const rebuilt = await cache.answer(whole);
    expect(text(rebuilt.parts)).to.contain(packLeaves(after));
    expect(text(sending.parts), "the answer sent before the rebuild").to.equal(sent);
  });
});
