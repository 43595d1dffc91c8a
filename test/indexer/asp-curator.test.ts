import { expect } from "chai";
import { createLeanIMT, nullifierHashOf, packLeaves, rootOfWitness, unpackLeaves } from "../../sdk/index.js";
import type { IndexerConfigInput } from "../../indexer/config.js";
import { expectApiError } from "./helpers/api-errors.js";
import {
  buildIndexerConfig,
  rewriteScreeningList,
  startIndexer,
  writeScreeningLists,
  type RunningIndexer,
} from "./helpers/indexer-harness.js";
import { startLocalChain } from "./helpers/local-chain.js";
import { deposit, ragequit, refundUnusedPayment, relayWithdrawal } from "./helpers/pool-actions.js";

const chain = await startLocalChain();
const { entrypoint } = chain.facilitator;
const { alice, bob, carol, dave, erin } = chain.depositors;

describe("ASP curator on a local chain", function () {
  let running: RunningIndexer | undefined;
  const start = async (overrides: Partial<IndexerConfigInput> = {}) => {
    running = await startIndexer(buildIndexerConfig(chain, overrides));
    return running;
  };

  beforeEach(async function () {
    await chain.reset();
  });
  afterEach(async function () {
    await running?.stop();
    running = undefined;
  });
  after(async function () {
    await chain.close();
  });

  it("leaves a flagged depositor's label out of the ASP tree, publishes the others' root and lets it ragequit", async function () {
    const approved = await deposit(chain, alice, 1);
    const flagged = await deposit(chain, erin, 2, 3_000_000n);
    const alsoApproved = await deposit(chain, bob, 3);
    const { indexer, client } = await start(writeScreeningLists({ sanctions: [erin.address] }));
    await indexer.sync.catchUp();
    await indexer.curator.publish();

    const expectedRoot = createLeanIMT([approved.label, alsoApproved.label]).root;
    expect(await entrypoint.latestRoot()).to.equal(expectedRoot);
    expect(await client.status()).to.deep.include({ aspRoot: expectedRoot, aspRootMatches: true, aspLabelCount: 2 });
    const { witness } = await client.aspProof(approved.label);
    expect(rootOfWitness(approved.label, witness)).to.equal(expectedRoot);

    const refusal = await expectApiError(client.aspProof(flagged.label), 404, "LABEL_NOT_APPROVED");
    expect(refusal.message).to.contain("ragequit");
    const [decision] = (await client.deposit(flagged.label)).aspDecisions;
    expect(decision).to.deep.include({ approved: false, list: "sanctions" });
    expect(decision?.reason).to.contain("test sanctions entry");

    await ragequit(chain, erin, flagged);
    await indexer.sync.catchUp();
    expect((await client.nullifier(nullifierHashOf(flagged.nullifier))).spend?.kind).to.equal("ragequit");
    expect((await client.deposit(flagged.label)).ragequit).to.equal(true);
  });

  it("screens every deposit again when a list file changes, without a restart, and publishes the new root", async function () {
    const lists = writeScreeningLists();
    const kept = await deposit(chain, alice, 1);
    const later = await deposit(chain, bob, 2);
    const { indexer, client } = await start(lists);
    await indexer.sync.catchUp();
    await indexer.curator.publish();
    expect(await entrypoint.latestRoot()).to.equal(createLeanIMT([kept.label, later.label]).root);

    rewriteScreeningList(lists.overlayList, [bob.address], "bridge exploit, 2025");
    await indexer.curator.reloadLists();
    await indexer.curator.publish();

    expect(await entrypoint.latestRoot()).to.equal(createLeanIMT([kept.label]).root);
    await expectApiError(client.aspProof(later.label), 404, "LABEL_NOT_APPROVED");
    const trail = (await client.deposit(later.label)).aspDecisions;
    expect(trail.map(({ approved, list }) => ({ approved, list }))).to.deep.equal([
      { approved: true, list: null },
      { approved: false, list: "overlay" },
    ]);
    expect(trail[1]?.listsDigest).to.not.equal(trail[0]?.listsDigest);
  });

  it("publishes a revoking root when a label leaves the set, keeping the roots from before it was approved", async function () {
    const lists = writeScreeningLists();
    const { indexer } = await start(lists);
    const published: bigint[] = [];
    for (const [depositor, tag] of [[alice, 1], [bob, 2], [carol, 3]] as const) {
      await deposit(chain, depositor, tag);
      await indexer.sync.catchUp();
      await indexer.curator.publish();
      published.push(await entrypoint.latestRoot());
    }
    const [beforeBob, withBob, all] = published as [bigint, bigint, bigint];

    rewriteScreeningList(lists.overlayList, [bob.address], "bridge exploit, 2025");
    await indexer.curator.reloadLists();
    await indexer.curator.publish();

    const [revoking] = (await entrypoint.queryFilter(entrypoint.filters.RootUpdated())).slice(-1);
    expect(revoking?.args.revoking).to.equal(true);
    const [kept] = (await entrypoint.queryFilter(entrypoint.filters.AspRootsRevoked())).slice(-1);
    expect(kept?.args.keptRoots).to.deep.equal([beforeBob]);
    for (const root of [withBob, all]) expect(await entrypoint.isRevokedAspRoot(root)).to.equal(true);
    expect(await entrypoint.isKnownAspRoot(beforeBob)).to.equal(true);

    // A later approval only adds a label: its root revokes nothing.
    const afterExclusion = await entrypoint.latestRoot();
    await deposit(chain, dave, 4);
    await indexer.sync.catchUp();
    await indexer.curator.publish();
    const [added] = (await entrypoint.queryFilter(entrypoint.filters.RootUpdated())).slice(-1);
    expect(added?.args.revoking).to.equal(false);
    expect(await entrypoint.isKnownAspRoot(afterExclusion)).to.equal(true);
  });

  it("revokes from a fresh start only when the chain's latest root holds a label the curator does not approve", async function () {
    const lastUpdate = async () => (await entrypoint.queryFilter(entrypoint.filters.RootUpdated())).at(-1)!.args;
    const syncAndPublish = async (lists = writeScreeningLists()) => {
      const { indexer } = await start(lists);
      await indexer.sync.catchUp();
      await indexer.curator.publish();
      await running!.stop();
      running = undefined;
    };
    await deposit(chain, alice, 1);
    await syncAndPublish();
    await deposit(chain, bob, 2);
    await syncAndPublish();
    const withBob = await entrypoint.latestRoot();
    expect((await lastUpdate()).revoking, "the tree only grew").to.equal(false);

    await deposit(chain, carol, 3);
    await syncAndPublish(writeScreeningLists({ sanctions: [bob.address] }));
    expect((await lastUpdate()).revoking).to.equal(true);
    expect(await entrypoint.isRevokedAspRoot(withBob)).to.equal(true);
  });

  it("takes a refund note into the state tree under its origin's label, with no decision or label of its own", async function () {
    const origin = await deposit(chain, alice, 1, 3_000_000n);
    const { indexer, client } = await start();
    await indexer.sync.catchUp();
    await indexer.curator.publish();
    const published = await entrypoint.latestRoot();
    const { change, refund } = await refundUnusedPayment(chain, client, origin, 1_200_000n);
    await indexer.sync.catchUp();
    await indexer.curator.publish();

    const trees = await client.treeLeaves();
    expect(unpackLeaves(trees.state.leaves)).to.deep.equal([origin, change, refund].map(({ commitment }) => commitment));
    expect(unpackLeaves(trees.asp.leaves), "a refund adds no label").to.deep.equal([origin.label]);
    expect(await entrypoint.latestRoot(), "nothing to publish").to.equal(published);
    expect(await client.status()).to.deep.include({ stateRootMatches: true, aspLabelCount: 1, anonymitySet: 1 });
    expect((await client.deposit(origin.label)).aspDecisions, "a refund is never screened").to.have.length(1);

    // The origin's approval reaches it: spent with the origin label's ASP path.
    await relayWithdrawal(chain, client, refund, refund.value);
    await indexer.sync.catchUp();
    expect((await client.nullifier(nullifierHashOf(refund.nullifier))).spend?.kind).to.equal("withdrawal");
  });

  it("counts distinct approved depositors, not deposits, in the anonymity set", async function () {
    const { indexer, client } = await start({
      ...writeScreeningLists({ sanctions: [erin.address] }),
      operatorAddresses: dave.address,
    });
    for (const [depositor, times] of [[alice, 3], [bob, 2], [dave, 1], [erin, 1]] as const) {
      for (let i = 0; i < times; i++) await deposit(chain, depositor, 10 * i + times);
    }
    await indexer.sync.catchUp();
    // Approved, but under no root on chain yet: they hide no one until the root is published.
    expect(await client.status()).to.deep.include({ anonymitySet: 0, aspLabelCount: 6 });
    await indexer.curator.publish();
    expect((await client.status()).anonymitySet).to.equal(2);

    await deposit(chain, carol, 99);
    await indexer.sync.catchUp();
    expect((await client.status()).anonymitySet).to.equal(2);
    await indexer.curator.publish();
    expect((await client.status()).anonymitySet).to.equal(3);
    expect(await client.anonymitySet(1_000_000n)).to.deep.equal({ withdrawnValue: 1_000_000n, anonymitySet: 3, aspRoot: await chain.facilitator.entrypoint.latestRoot() });
    expect((await client.anonymitySet(1_000_001n)).anonymitySet).to.equal(0);
  });

  it("serves the leaves of the state tree and of the on-chain ASP tree, which rebuild the roots the chain has", async function () {
    const approved = await deposit(chain, alice, 1);
    const flagged = await deposit(chain, erin, 2);
    const { indexer, client } = await start(writeScreeningLists({ sanctions: [erin.address] }));
    await indexer.sync.catchUp();
    await expectApiError(client.treeLeaves(), 503, "ASP_ROOT_NOT_PUBLISHED");
    await indexer.curator.publish();

    const trees = await client.treeLeaves();
    const leaves = { state: unpackLeaves(trees.state.leaves), asp: unpackLeaves(trees.asp.leaves) };
    expect(leaves.state).to.deep.equal([approved.commitment, flagged.commitment]);
    expect(leaves.asp).to.deep.equal([approved.label]);
    const rebuilt = { state: createLeanIMT(leaves.state), asp: createLeanIMT(leaves.asp) };
    expect(trees.state).to.deep.include({ root: rebuilt.state.root, depth: rebuilt.state.depth, size: 2 });
    expect(trees.state.root).to.equal(await chain.facilitator.privacyPool.currentRoot());
    expect(trees.asp).to.deep.include({ root: await entrypoint.latestRoot(), depth: 0, size: 1 });
    expect(rebuilt.asp.root).to.equal(trees.asp.root);

    // A label approved and not yet published: the ASP tree served stays the on-chain one, the state tree grows.
    const later = await deposit(chain, bob, 3);
    await indexer.sync.catchUp();
    const { state, asp } = await client.trees();
    expect(state).to.deep.equal({ root: createLeanIMT([...leaves.state, later.commitment]).root, depth: 2, size: 3 });
    expect(asp).to.deep.equal({ root: trees.asp.root, depth: 0, size: 1 });
    // From an offset: only the leaves after it, and from 0 when the offset is past the tree (rebuilt since).
    const after = await client.treeLeaves({ stateFrom: 2, aspFrom: 5 });
    expect(after.state).to.deep.include({ from: 2, size: 3, leaves: packLeaves([later.commitment]) });
    expect(after.asp).to.deep.include({ from: 0, size: 1, leaves: packLeaves([approved.label]) });
  });

  it("serves a tree rebuilt by a revocation and regrown past the caller's leaves from 0 when the caller names the root its leaves make", async function () {
    const lists = writeScreeningLists();
    const { indexer, client } = await start(lists);
    const first = [await deposit(chain, alice, 1), await deposit(chain, bob, 2), await deposit(chain, carol, 3)];
    await indexer.sync.catchUp();
    await indexer.curator.publish();
    const held = await client.treeLeaves();
    expect(held.asp.size).to.equal(3);

    rewriteScreeningList(lists.overlayList, [bob.address], "bridge exploit, 2025");
    await indexer.curator.reloadLists();
    const later = [await deposit(chain, dave, 4), await deposit(chain, erin, 5)];
    await indexer.sync.catchUp();
    await indexer.curator.publish();
    const rebuilt = [first[0]!, first[2]!, ...later].map(({ label }) => label);
    expect(await entrypoint.latestRoot()).to.equal(createLeanIMT(rebuilt).root);

    // By sizes alone the rebuilt tree (4 labels) follows the 3 held: the slice would sit on a stale prefix.
    const bySize = await client.treeLeaves({ aspFrom: 3 });
    expect(bySize.asp).to.deep.include({ from: 3, size: 4 });
    const named = await client.treeLeaves({ aspFrom: 3, aspFromRoot: held.asp.root, stateFrom: 3, stateFromRoot: held.state.root });
    expect(named.asp).to.deep.include({ from: 0, size: 4, leaves: packLeaves(rebuilt), root: createLeanIMT(rebuilt).root });
    expect(named.state, "the state tree only grew").to.deep.include({ from: 3, size: 5, leaves: packLeaves(later.map(({ commitment }) => commitment)) });
    // The root of a prefix inside the tree is checked too: right, the slice; wrong, from 0.
    const prefixRoot = createLeanIMT(rebuilt.slice(0, 2)).root;
    expect((await client.treeLeaves({ aspFrom: 2, aspFromRoot: prefixRoot })).asp).to.deep.include({ from: 2, leaves: packLeaves(rebuilt.slice(2)) });
    expect((await client.treeLeaves({ aspFrom: 2, aspFromRoot: prefixRoot + 1n })).asp).to.deep.include({ from: 0 });
    await expectApiError(client.treeLeaves({ aspFrom: 2, aspFromRoot: -1n }), 400, "INVALID_REQUEST");
  });

  it("serves ASP paths only under a root the entrypoint has, when another postman publishes", async function () {
    const note = await deposit(chain, alice, 1);
    const { indexer, client } = await start({ publishRoots: "false", postmanPrivateKey: undefined });
    await indexer.sync.catchUp();
    await indexer.curator.publish();
    await expectApiError(client.aspProof(note.label), 503, "ASP_ROOT_NOT_PUBLISHED");
    expect((await client.status()).aspRootMatches).to.equal(false);

    await (await entrypoint.updateRoot(createLeanIMT([note.label]).root, 0n, "published-elsewhere")).wait();
    await indexer.sync.catchUp();
    expect((await client.aspProof(note.label)).witness.root).to.equal(await entrypoint.latestRoot());
    expect((await client.status()).aspRootMatches).to.equal(true);
  });
});
