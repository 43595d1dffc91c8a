import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "chai";
import { Wallet } from "ethers";
import type { Prover } from "../../relayer/settlement/prover.js";
import { namePublicSignals, nullifierHashOf, type Note } from "../../sdk/index.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { ragequitNote } from "../contracts/helpers/notes.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { deployForwarder, forwardAhead } from "./helpers/forwarder.js";
import { manualMining } from "./helpers/manual-mining.js";
import { buildRelayerConfig, serviceDeposit, startRelayer, type RunningRelayer } from "./helpers/relayer-harness.js";

const SETTLE = "/api/facilitator/settle";
const AMOUNT = 1_000_000n;

/**
 * The relayer's batching (relayer/chain/relay-queue.ts) on a chain that mines only when told: settles whose proofs
 * are ready while a relay is pending leave together in one Entrypoint.relayBatch once it is mined.
 */
describe("relayer: relays leave at once, batched when they coincide", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  let relayer: RunningRelayer;
  let proofsDone = 0;
  let tag = 900;
  /** While set, a finished proof waits for it: proofs released together make their relays coincide. */
  let proofGate: Promise<void> | undefined;

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

  /**
   * Three settles of fresh notes whose proofs are released together, on a chain that mines only when told: the first
   * relay leaves alone, the two proven while it was being sent as one relayBatch. Their transactions are pending.
   */
  const coincidingSettles = async () => {
    const notes = await freshNotes(3);
    const requests = notes.map(settleRequest);
    await setAutomine(false);
    const start = proofsDone;
    let release!: () => void;
    proofGate = new Promise((resolve) => (release = resolve));
    const answers = requests.map((request) => relayer.post(SETTLE, request.body));
    await untilProofs(start + 3);
    release();
    proofGate = undefined;
    return { notes, requests, answers, sent: await Promise.all(notes.map(pendingRelay)) };
  };

  before(async function () {
    chain = await startLocalChain();
    mining = manualMining(chain, () => relayer);
    indexer = await startIndexer(buildIndexerConfig(chain));
    const counting = (prover: Prover): Prover => ({
      prove: async (input) => {
        const proof = await prover.prove(input);
        proofsDone++;
        await proofGate;
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

  it("sends a relay proven while another is pending at once, without waiting for its receipt: both are mined in the next block", async function () {
    const notes = await freshNotes(2);
    const requests = notes.map(settleRequest);
    await setAutomine(false);
    const first = relayer.post(SETTLE, requests[0]!.body);
    const pendingFirst = await pendingRelay(notes[0]!);
    const second = relayer.post(SETTLE, requests[1]!.body);
    const pendingSecond = await pendingRelay(notes[1]!); // sent while the first is still unmined
    expect(pendingSecond.hash).to.not.equal(pendingFirst.hash);
    await mine();

    const answers = await Promise.all([first, second]);
    for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    const provider = chain.facilitator.privacyPool.runner!.provider!;
    const blocks = await Promise.all([pendingFirst, pendingSecond].map(async (tx) => (await provider.getTransactionReceipt(tx.hash))!.blockNumber));
    expect(blocks[0]).to.equal(blocks[1]);
    for (const { payTo } of requests) expect(await chain.facilitator.usdc.balanceOf(payTo)).to.equal(AMOUNT);
  });

  it("sends the relays that coincide as one relayBatch, each answering its own payment", async function () {
    const { notes, requests, answers, sent } = await coincidingSettles();
    await mine();

    for (const answer of await Promise.all(answers)) expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    const { entrypoint, usdc } = chain.facilitator;
    // The first to arrive leaves alone (nothing was waiting); the two that arrived while it was being sent, together.
    const kinds = sent.map((tx) => `${entrypoint.interface.parseTransaction(tx)?.name} ${tx.hash}`).sort();
    expect(new Set(kinds).size).to.equal(2);
    expect(kinds.filter((kind) => kind.startsWith("relayBatch "))).to.have.length(2);
    expect(kinds.filter((kind) => kind.startsWith("relay "))).to.have.length(1);
    for (const { payTo } of requests) expect(await usdc.balanceOf(payTo)).to.equal(AMOUNT);
  });

  it("pays the others when a note of theirs was spent first: the spent note answers ALREADY_SPENT, the others settle", async function () {
    const notes = await freshNotes(3);
    const requests = notes.map(settleRequest);
    const start = proofsDone;
    let release!: () => void;
    proofGate = new Promise((resolve) => (release = resolve));
    const answers = requests.map((request) => relayer.post(SETTLE, request.body));
    await untilProofs(start + 3);
    // The depositor takes the third note back while its proof waits: a batch holding it skips it
    // (WithdrawalSkipped) and pays the others; relayed alone, it is refused before it is sent.
    await (await ragequitNote(chain.facilitator.privacyPool, chain.depositors.bob, notes[2]!)).wait();
    await indexer.indexer.sync.catchUp();
    release();
    proofGate = undefined;

    const [settledFirst, settledSecond, refused] = await Promise.all(answers);
    expect(settledFirst!.status, JSON.stringify(settledFirst!.body)).to.equal(200);
    expect(settledSecond!.status, JSON.stringify(settledSecond!.body)).to.equal(200);
    expect(refused!.status, JSON.stringify(refused!.body)).to.equal(409);
    expect(refused!.body).to.deep.include({ settled: false, code: "ALREADY_SPENT" });
    expect(await chain.facilitator.usdc.balanceOf(requests[2]!.payTo)).to.equal(0n);
  });

  it("settles a batched withdrawal whose copy, sent alone through another contract, was mined first, from what the chain did", async function () {
    const stranger = chain.depositors.erin;
    const forwarder = await deployForwarder(stranger);
    const { notes, requests, answers, sent } = await coincidingSettles();
    // A stranger takes one withdrawal out of the pending batch and relays it alone through its contract, ahead of it.
    const { entrypoint, usdc, privacyPool } = chain.facilitator;
    const batchIndex = sent.findIndex((tx) => entrypoint.interface.parseTransaction(tx)?.name === "relayBatch");
    const batch = entrypoint.interface.parseTransaction(sent[batchIndex]!)!;
    const copied = notes[batchIndex]!;
    const at = (batch.args[1] as { pubSignals: bigint[] }[]).findIndex((proof) => namePublicSignals(proof.pubSignals).nullifierHash === nullifierHashOf(copied.nullifier));
    const relayAlone = entrypoint.interface.encodeFunctionData("relay", [batch.args[0][at], batch.args[1][at], batch.args[2], batch.args[3][at]]);
    const copy = await forwardAhead(forwarder, stranger, sent[batchIndex]!, relayAlone);
    await mine();
    await indexer.indexer.sync.catchUp();

    const settled = await Promise.all(answers);
    for (const answer of settled) expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    expect(settled[batchIndex]!.body).to.deep.include({ settled: true, txHash: copy.hash });
    // Each payee is paid once; the copied note by the stranger's transaction only.
    for (const { payTo } of requests) expect(await usdc.balanceOf(payTo)).to.equal(AMOUNT);
    const withdrawn = await privacyPool.queryFilter(privacyPool.filters.Withdrawn());
    expect(withdrawn.filter((event) => event.args.spentNullifierHash === nullifierHashOf(copied.nullifier)).map((event) => event.transactionHash)).to.deep.equal([copy.hash]);
  });
});
