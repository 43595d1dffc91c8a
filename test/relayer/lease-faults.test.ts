import { expect } from "chai";
import { Wallet } from "ethers";
import type { RelayerConfig } from "../../relayer/config.js";
import { nullifierHashOf, type Note } from "../../sdk/index.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { statePathFromChain } from "../contracts/helpers/notes.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { buildRelayerConfig, serviceDeposit, startRelayer, type RunningRelayer } from "./helpers/relayer-harness.js";
import { deployForwarder, forwardAhead } from "./helpers/forwarder.js";
import { manualMining } from "./helpers/manual-mining.js";
import { holdSqliteWriteLock } from "./helpers/sqlite-writer.js";

const SETTLE = "/api/facilitator/settle";
const AMOUNT = 1_000_000n;

/**
 * Leases of one relayer against faults it cannot prevent: its relay's calldata copied and mined first by someone
 * else, and its SQLite file held by another writer, briefly or past the busy timeout.
 */
describe("relayer: leases under a copied relay and a locked database", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  let config: RelayerConfig;
  let relayer: RunningRelayer;
  let tag = 401;

  let mining: ReturnType<typeof manualMining>;
  const setAutomine = (on: boolean) => mining.setAutomine(on);
  const mine = () => mining.mine();
  const pendingRelay = (note: Note) => mining.pendingRelay(note);

  /** A fresh, ASP-approved note and a settle request of AMOUNT from it to a fresh payee. */
  const freshSettle = async () => {
    const note = await deposit(chain, chain.depositors.alice, tag++, 3_000_000n);
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    const payTo = Wallet.createRandom().address;
    return { note, payTo, body: { paymentDetails: { payTo, maxAmountRequired: AMOUNT.toString() }, serviceDeposit: serviceDeposit(note) } };
  };

  /** The withdrawals that spent `note`, from the pool's Withdrawn events. */
  const withdrawalsOf = async (note: Note) => {
    const pool = chain.facilitator.privacyPool;
    const events = await pool.queryFilter(pool.filters.Withdrawn());
    return events.filter((event) => event.args.spentNullifierHash === nullifierHashOf(note.nullifier));
  };

  before(async function () {
    chain = await startLocalChain();
    mining = manualMining(chain, () => relayer);
    indexer = await startIndexer(buildIndexerConfig(chain));
    config = buildRelayerConfig(chain, indexer, { leaseWaitMs: "30000" });
    relayer = await startRelayer(config);
  });
  afterEach(async function () {
    await setAutomine(true);
  });
  after(async function () {
    await relayer?.stop();
    await indexer?.stop();
    await chain?.close();
  });

  it("settles from the copy when its relay's calldata is copied and mined first, and replays it", async function () {
    const { note, payTo, body } = await freshSettle();
    await setAutomine(false);
    const answering = relayer.post(SETTLE, body);
    const ours = await pendingRelay(note);
    // Someone watching the mempool sends the same calldata with a higher tip: it is mined first, ours reverts.
    const copy = await chain.depositors.erin.sendTransaction({
      to: ours.to,
      data: ours.data,
      gasLimit: ours.gasLimit,
      maxFeePerGas: ours.maxFeePerGas! * 2n,
      maxPriorityFeePerGas: ours.maxPriorityFeePerGas! * 2n + 1n,
    });
    await mine();
    expect((await chain.connection.ethers.provider.getTransactionReceipt(ours.hash))?.status).to.equal(0);
    await indexer.indexer.sync.catchUp();

    const answer = await answering;
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    expect(answer.body).to.deep.include({ settled: true, txHash: copy.hash, amount: AMOUNT.toString(), replayed: false });
    expect((await withdrawalsOf(note)).map((event) => event.transactionHash)).to.deep.equal([copy.hash]);
    expect(await chain.facilitator.usdc.balanceOf(payTo)).to.equal(AMOUNT);
    expect(await relayer.relayer.store.getLease(nullifierHashOf(note.nullifier))).to.deep.include({ state: "settled", fundingTxHash: copy.hash });

    const retried = await relayer.post(SETTLE, body);
    expect(retried.status).to.equal(200);
    expect(retried.body).to.deep.include({ settled: true, txHash: copy.hash, replayed: true });
  });

  it("settles from a copy sent through another contract and mined first, read from what the chain did, and replays it", async function () {
    const forwarder = await deployForwarder(chain.depositors.erin);
    const { note, payTo, body } = await freshSettle();
    await setAutomine(false);
    const answering = relayer.post(SETTLE, body);
    const ours = await pendingRelay(note);
    // The stranger's transaction calls its own contract, which makes the entrypoint call: no calldata to read it by.
    const copy = await forwardAhead(forwarder, chain.depositors.erin, ours);
    await mine();
    expect((await chain.connection.ethers.provider.getTransactionReceipt(ours.hash))?.status).to.equal(0);
    await indexer.indexer.sync.catchUp();

    const answer = await answering;
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    expect(answer.body).to.deep.include({ settled: true, txHash: copy.hash, amount: AMOUNT.toString(), remainingValue: (note.value - AMOUNT).toString(), replayed: false });
    // Every unit of the note: the amount at the payee, the rest in the change note the answer returns; withdrawn once.
    expect(await chain.facilitator.usdc.balanceOf(payTo)).to.equal(AMOUNT);
    expect(BigInt((answer.body.nextDeposit as { value: string }).value)).to.equal(note.value - AMOUNT);
    expect((await withdrawalsOf(note)).map((event) => event.transactionHash)).to.deep.equal([copy.hash]);
    expect(await relayer.relayer.store.getLease(nullifierHashOf(note.nullifier))).to.deep.include({ state: "settled", fundingTxHash: copy.hash });

    const retried = await relayer.post(SETTLE, body);
    expect(retried.status).to.equal(200);
    expect(retried.body).to.deep.include({ settled: true, txHash: copy.hash, replayed: true });
  });

  it("answers ALREADY_SPENT naming the transaction when someone else spends the note first, and fails the lease", async function () {
    const { note, payTo, body } = await freshSettle();
    await setAutomine(false);
    const answering = relayer.post(SETTLE, body);
    const ours = await pendingRelay(note);
    // The depositor takes the note back with a higher tip while the relay is pending (a fixed gas limit: an estimate
    // would run after the pending relay and revert).
    const pool = chain.facilitator.privacyPool.connect(chain.depositors.alice);
    const path = await statePathFromChain(chain.facilitator.privacyPool, note.commitment);
    const ragequit = await pool.ragequit(note.value, note.label, note.nullifier, note.secret, path, {
      gasLimit: 500_000n,
      maxFeePerGas: ours.maxFeePerGas! * 2n,
      maxPriorityFeePerGas: ours.maxPriorityFeePerGas! * 2n + 1n,
    });
    await mine();
    await indexer.indexer.sync.catchUp();

    const answer = await answering;
    expect(answer.status, JSON.stringify(answer.body)).to.equal(409);
    expect(answer.body).to.deep.include({ settled: false, code: "ALREADY_SPENT" });
    expect(answer.body.error).to.contain(ragequit.hash);
    expect(await withdrawalsOf(note)).to.have.length(0);
    expect(await chain.facilitator.usdc.balanceOf(payTo)).to.equal(0n);
    // Failed, with the relay it signed still on record.
    expect(await relayer.relayer.store.getLease(nullifierHashOf(note.nullifier))).to.deep.include({ state: "failed", fundingTxHash: ours.hash });

    const retried = await relayer.post(SETTLE, body);
    expect(retried.status).to.equal(409);
    expect(retried.body.code).to.equal("ALREADY_SPENT");
  });

  it("waits for another writer holding the SQLite file briefly, then settles", async function () {
    const { note, payTo, body } = await freshSettle();
    const lock = await holdSqliteWriteLock(config.dbPath, 1_500);
    const answer = await relayer.post(SETTLE, body);
    await lock.released;
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    expect(answer.body).to.deep.include({ settled: true, replayed: false });
    expect(await withdrawalsOf(note)).to.have.length(1);
    expect(await chain.facilitator.usdc.balanceOf(payTo)).to.equal(AMOUNT);
  });

  it("answers 202 with the hash when the store fails after the relay was sent, then replays the settlement", async function () {
    const { note, payTo, body } = await freshSettle();
    await setAutomine(false);
    const answering = relayer.post(SETTLE, body);
    const fundingTxHash = (await pendingRelay(note)).hash;
    // Held past the busy timeout (5 s) plus the relayer's block polling (4 s): finalizing the lease fails.
    const lock = await holdSqliteWriteLock(config.dbPath, 15_000);
    await mine();

    const uncertain = await answering;
    expect(uncertain.status, JSON.stringify(uncertain.body)).to.equal(202);
    expect(uncertain.body).to.deep.include({ settled: false, code: "SETTLEMENT_UNCERTAIN", state: "uncertain", fundingTxHash });
    expect(uncertain.body.error).to.not.contain("nothing was spent");
    expect((await withdrawalsOf(note)).map((event) => event.transactionHash)).to.deep.equal([fundingTxHash]);

    await lock.released;
    const replayed = await relayer.post(SETTLE, body);
    expect(replayed.status, JSON.stringify(replayed.body)).to.equal(200);
    expect(replayed.body).to.deep.include({ settled: true, txHash: fundingTxHash, replayed: true });
    expect(await withdrawalsOf(note)).to.have.length(1);
    expect(await chain.facilitator.usdc.balanceOf(payTo)).to.equal(AMOUNT);
  });
});
