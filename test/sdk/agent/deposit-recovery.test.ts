import { expect } from "chai";
import { JsonRpcProvider, type Signer } from "ethers";
import { DepositError, depositNote, nextDepositIndex, ragequitNote, recoverNotes, type DepositNoteOptions } from "../../../sdk/agent/index.js";
import { createNote, labelOf, nullifierHashOf, type Note } from "../../../sdk/index.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../../indexer/helpers/indexer-harness.js";
import { startLocalChain } from "../../indexer/helpers/local-chain.js";
import { relayWithdrawal } from "../../indexer/helpers/pool-actions.js";
import { rejectionOf } from "./helpers/rejection.js";

const chain = await startLocalChain();
const { usdc, privacyPool, addressBook, scope } = chain.facilitator;
const { alice, bob } = chain.depositors;
// Recovery reads the chain over HTTP JSON-RPC, as an agent's wallet does.
const provider = new JsonRpcProvider(chain.rpc.url, undefined, { staticNetwork: true });
const SEED = `0x${"5eed".repeat(16)}`;

/** Mints `value` to `signer` and deposits it as the seed's note. */
async function deposit(signer: Signer, value: bigint, options: Partial<DepositNoteOptions> = {}) {
  await (await usdc.mint(signer, value)).wait();
  return depositNote({ signer, addressBook, value, seed: SEED, ...options });
}

describe("agent deposits and recovery on a local chain", function () {
  let indexer: RunningIndexer | undefined;

  beforeEach(async function () {
    await chain.reset();
  });
  afterEach(async function () {
    await indexer?.stop();
    indexer = undefined;
  });
  after(async function () {
    provider.destroy();
    await chain.close();
  });

  it("refuses a deposit below 1 USDC before sending anything", async function () {
    const nonce = await alice.getNonce();
    const refused = await rejectionOf(depositNote({ signer: alice, addressBook, value: 999_999n, seed: SEED }));
    expect(refused).to.be.instanceOf(DepositError).and.to.deep.include({ code: "DEPOSIT_BELOW_MINIMUM" });
    expect(refused.message).to.equal("deposit of 999999 atomic USDC is below the pool's minimum of 1000000 (1 USDC); nothing was sent. Deposit at least 1000000.");
    expect(await alice.getNonce()).to.equal(nonce);
  });

  it("deposits at the seed's next unused index, with the label from the pool's Deposited event", async function () {
    const first = await deposit(alice, 2_000_000n);
    expect(first.index).to.equal(0);
    expect(first.note.label).to.equal(labelOf(scope, 1n));
    expect(await privacyPool.depositorOf(first.note.label)).to.equal(alice.address);
    expect(await nextDepositIndex({ provider, addressBook, seed: SEED })).to.equal(1);

    const second = await deposit(bob, 1_000_000n);
    expect(second.index).to.equal(1);
    expect(second.note.nullifier).to.not.equal(first.note.nullifier);
  });

  it("takes a deposit back to its depositor by ragequit, with a path rebuilt from the pool's events; a note that is no leaf is refused before sending", async function () {
    const taken = await deposit(alice, 2_000_000n);
    await deposit(bob, 1_000_000n);
    await deposit(bob, 3_000_000n);
    const nonce = await alice.getNonce();
    const misremembered = createNote(taken.note.value + 1n, taken.note.label, taken.note);
    const refused = await rejectionOf(ragequitNote({ signer: alice, addressBook, note: misremembered }));
    expect(refused.message).to.contain("no leaf of the pool's state tree");
    expect(await alice.getNonce()).to.equal(nonce);

    const balance = await usdc.balanceOf(alice);
    // Small log ranges: the leaves come from several eth_getLogs calls.
    await ragequitNote({ signer: alice, addressBook, note: taken.note, blockRange: 2 });
    expect(await usdc.balanceOf(alice)).to.equal(balance + 2_000_000n);
    expect(await privacyPool.isNullifierSpent(nullifierHashOf(taken.note.nullifier))).to.equal(true);
    // A provider without ethers' 250 ms cache of the block number: the ragequit's block is a moment old.
    const uncached = new JsonRpcProvider(chain.rpc.url, undefined, { staticNetwork: true, cacheTimeout: -1 });
    const recovered = await recoverNotes({ provider: uncached, addressBook, seed: SEED });
    uncached.destroy();
    expect(recovered.chains.find((chain) => chain.latest.label === taken.note.label)?.status).to.equal("ragequit");
  });

  it("refuses a used deposit index and a deposit the balance cannot cover, before sending anything", async function () {
    await deposit(alice, 1_000_000n);
    await (await usdc.mint(alice, 1_000_000n)).wait();
    const nonce = await alice.getNonce();
    const options = { signer: alice, addressBook, seed: SEED };
    const reused = await rejectionOf(depositNote({ ...options, value: 1_000_000n, index: 0 }));
    expect(reused).to.deep.include({ code: "DEPOSIT_INDEX_USED" });
    expect(reused.message).to.match(/^deposit index 0 of this seed is already used; nothing was sent/);
    const uncovered = await rejectionOf(depositNote({ ...options, value: 5_000_000n }));
    expect(uncovered).to.deep.include({ code: "DEPOSIT_ABOVE_BALANCE" });
    expect(uncovered.message).to.equal(`${alice.address} holds 1000000 atomic USDC, the deposit needs 5000000; nothing was sent. Fund ${alice.address} or deposit less.`);
    expect(await alice.getNonce()).to.equal(nonce);
  });

  it("recovers from the seed alone the latest change notes, after partial and full withdrawals", async function () {
    const { note: withdrawnThrice } = await deposit(alice, 10_000_000n);
    const { note: untouched } = await deposit(bob, 2_000_000n);
    const { note: emptied } = await deposit(alice, 1_000_000n);
    indexer = await startIndexer(buildIndexerConfig(chain));
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();

    const withdraw = async (note: Note, value: bigint) => {
      const change = await relayWithdrawal(chain, indexer!.client, note, value);
      await indexer!.indexer.sync.catchUp();
      return change;
    };
    let latest = withdrawnThrice;
    for (const value of [3_000_000n, 2_000_000n, 1_000_000n]) latest = await withdraw(latest, value);
    await withdraw(emptied, 1_000_000n);

    const blockRange = 4;
    chain.rpc.requests.length = 0;
    const recovered = await recoverNotes({ provider, addressBook, seed: SEED, blockRange });
    expect(recovered.unspent).to.deep.equal([latest, untouched]);
    expect(latest.value).to.equal(4_000_000n);
    expect(recovered.chains.map(({ depositIndex, status }) => ({ depositIndex, status }))).to.deep.equal([
      { depositIndex: 0, status: "unspent" },
      { depositIndex: 1, status: "unspent" },
      { depositIndex: 2, status: "empty" },
    ]);
    const steps = recovered.chains[0]!.history.map((step) => step.kind);
    expect(steps).to.deep.equal(["deposited", "withdrawn", "withdrawn", "withdrawn"]);
    expect(recovered.chains[2]!.latest.value).to.equal(0n);

    const ranges = chain.rpc.requests
      .filter((request) => request.method === "eth_getLogs")
      .map((request) => (request.params as [{ fromBlock: string; toBlock: string }])[0])
      .map(({ fromBlock, toBlock }) => [Number(fromBlock), Number(toBlock)] as const);
    expect(ranges[0]![0]).to.equal(addressBook.startBlock);
    expect(ranges.at(-1)![1]).to.equal(recovered.toBlock);
    for (const [index, [from, to]] of ranges.entries()) {
      expect(to - from).to.be.lessThan(blockRange);
      if (index > 0) expect(from).to.equal(ranges[index - 1]![1] + 1);
    }
  });
});
