import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "chai";
import { Wallet } from "ethers";
import type { Prover } from "../../relayer/settlement/prover.js";
import type { Note } from "../../sdk/index.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { ragequitNote } from "../contracts/helpers/notes.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { manualMining } from "./helpers/manual-mining.js";
import { buildRelayerConfig, serviceDeposit, startRelayer, type RunningRelayer } from "./helpers/relayer-harness.js";

const SETTLE = "/api/facilitator/settle";
const AMOUNT = 1_000_000n;

/**
 * The relayer's batching (relayer/chain/relay-queue.ts) on a chain that mines only when told: settles whose proofs
 * are ready while a relay is pending leave together in one Entrypoint.relayBatch once it is mined.
 */
describe("relayer: relays batched while one is pending", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  let relayer: RunningRelayer;
  let proofsDone = 0;
  let tag = 900;

  let mining: ReturnType<typeof manualMining>;
  const setAutomine = (on: boolean) => mining.setAutomine(on);
  const mine = () => mining.mine();
  const pendingRelay = (note: Note) => mining.pendingRelay(note);

  const settleRequest = (note: Note) => {
    const payTo = Wallet.createRandom().address;
    return { payTo, body: { paymentDetails: { payTo, maxAmountRequired: AMOUNT.toString() }, serviceDeposit: serviceDeposit(note) } };
  };

  /** Fresh ASP-approved notes, known to the indexer. */
  const freshNotes = async (count: number) => {
    const notes = [];
    for (let i = 0; i < count; i++) notes.push(await deposit(chain, chain.depositors.bob, tag++, 3_000_000n));
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    return notes;
  };

  const untilProofs = async (count: number) => {
    while (proofsDone < count) await sleep(50);
  };

  before(async function () {
    chain = await startLocalChain();
    mining = manualMining(chain, () => relayer);
    indexer = await startIndexer(buildIndexerConfig(chain));
    const counting = (prover: Prover): Prover => ({
      prove: async (input) => {
        const proof = await prover.prove(input);
        proofsDone++;
        return proof;
      },
      verify: (proof) => prover.verify(proof),
      close: () => prover.close(),
    });
    relayer = await startRelayer(buildRelayerConfig(chain, indexer), { wrapProver: counting });
  });
  afterEach(async function () {
    await setAutomine(true);
  });
  after(async function () {
    await relayer?.stop();
    await indexer?.stop();
    await chain?.close();
  });

  it("sends the relays proven while one is pending as one relayBatch, each answering its own payment", async function () {
    const notes = await freshNotes(3);
    const requests = notes.map(settleRequest);
    await setAutomine(false);
    const start = proofsDone;
    const first = relayer.post(SETTLE, requests[0]!.body);
    const alone = await pendingRelay(notes[0]!);
    const rest = requests.slice(1).map((request) => relayer.post(SETTLE, request.body));
    await untilProofs(start + 3);
    await mine();
    const batch = await pendingRelay(notes[1]!);
    expect((await pendingRelay(notes[2]!)).hash).to.equal(batch.hash);
    await mine();

    const answers = await Promise.all([first, ...rest]);
    for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    expect(answers.map((answer) => answer.body.txHash)).to.deep.equal([alone.hash, batch.hash, batch.hash]);
    const { entrypoint, usdc } = chain.facilitator;
    expect(entrypoint.interface.parseTransaction(batch)?.name).to.equal("relayBatch");
    expect(entrypoint.interface.parseTransaction(alone)?.name).to.equal("relay");
    for (const { payTo } of requests) expect(await usdc.balanceOf(payTo)).to.equal(AMOUNT);
  });

  it("pays the rest of a batch that carries a note spent before it was mined: that one answers ALREADY_SPENT, nothing is retried", async function () {
    const notes = await freshNotes(3);
    const requests = notes.map(settleRequest);
    await setAutomine(false);
    const start = proofsDone;
    const first = relayer.post(SETTLE, requests[0]!.body);
    await pendingRelay(notes[0]!);
    const rest = requests.slice(1).map((request) => relayer.post(SETTLE, request.body));
    await untilProofs(start + 3);
    // The depositor takes the third note back in the block that mines the first relay: the batch of the second and
    // third skips it and pays the second.
    const takenBack = await ragequitNote(chain.facilitator.privacyPool, chain.depositors.bob, notes[2]!);
    await mine();
    await takenBack.wait();
    await indexer.indexer.sync.catchUp();
    const second = await pendingRelay(notes[1]!);
    expect(chain.facilitator.entrypoint.interface.parseTransaction(second)?.name).to.equal("relayBatch");
    await mine();
    const sentBefore = await relayer.relayer.chain.provider.getTransactionCount(relayer.relayer.chain.relayer.address);

    const [settledFirst, settledSecond, refused] = await Promise.all([first, ...rest]);
    expect(settledFirst!.status).to.equal(200);
    expect(settledSecond!.status, JSON.stringify(settledSecond!.body)).to.equal(200);
    expect(refused!.status, JSON.stringify(refused!.body)).to.equal(409);
    expect(refused!.body).to.deep.include({ settled: false, code: "ALREADY_SPENT" });
    expect(await chain.facilitator.usdc.balanceOf(requests[2]!.payTo)).to.equal(0n);
    expect(await relayer.relayer.chain.provider.getTransactionCount(relayer.relayer.chain.relayer.address)).to.equal(sentBefore);
  });
});
