import { expect } from "chai";
import { createLeanIMT, nullifierHashOf, rootOfWitness } from "../../sdk/index.js";
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
import { deposit, ragequit } from "./helpers/pool-actions.js";

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

  it("counts distinct approved depositors, not deposits, in the anonymity set", async function () {
    const { indexer, client } = await start({
      ...writeScreeningLists({ sanctions: [erin.address] }),
      operatorAddresses: dave.address,
    });
    for (const [depositor, times] of [[alice, 3], [bob, 2], [dave, 1], [erin, 1]] as const) {
      for (let i = 0; i < times; i++) await deposit(chain, depositor, 10 * i + times);
    }
    await indexer.sync.catchUp();
    expect(await client.status()).to.deep.include({ anonymitySet: 2, aspLabelCount: 6 });

    await deposit(chain, carol, 99);
    await indexer.sync.catchUp();
    expect((await client.status()).anonymitySet).to.equal(3);
  });

  it("serves ASP paths only under a root the entrypoint has, when another postman publishes", async function () {
    const note = await deposit(chain, alice, 1);
    const { indexer, client } = await start({ publishRoots: "false", postmanPrivateKey: undefined });
    await indexer.sync.catchUp();
    await indexer.curator.publish();
    await expectApiError(client.aspProof(note.label), 503, "ASP_ROOT_NOT_PUBLISHED");
    expect((await client.status()).aspRootMatches).to.equal(false);

    await (await entrypoint.updateRoot(createLeanIMT([note.label]).root, "published-elsewhere")).wait();
    await indexer.sync.catchUp();
    expect((await client.aspProof(note.label)).witness.root).to.equal(await entrypoint.latestRoot());
    expect((await client.status()).aspRootMatches).to.equal(true);
  });
});
