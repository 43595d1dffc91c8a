import { expect } from "chai";
import { nullifierHashOf, type Note } from "../../sdk/index.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { buildRelayerConfig, serviceDeposit, startRelayer, type RunningRelayer } from "./helpers/relayer-harness.js";
import { startSwitchableRpc, type SwitchableRpc } from "./helpers/switchable-rpc.js";

const payee = "0x000000000000000000000000000000000000bEEF";
const SETTLE = "/api/facilitator/settle";

describe("relayer: a chain RPC outage during settle", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  let rpc: SwitchableRpc;
  let relayer: RunningRelayer;
  let note: Note;

  before(async function () {
    chain = await startLocalChain();
    note = await deposit(chain, chain.depositors.alice, 201, 3_000_000n);
    indexer = await startIndexer(buildIndexerConfig(chain));
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    rpc = await startSwitchableRpc(chain.rpc.url);
    // A short RPC timeout: a hung RPC answers CHAIN_UNAVAILABLE in a second, not in ethers' five minutes.
    relayer = await startRelayer(buildRelayerConfig(chain, indexer, { rpcUrl: rpc.url, rpcTimeoutMs: "1000" }));
  });

  after(async function () {
    await relayer?.stop();
    await rpc?.close();
    await indexer?.stop();
    await chain?.close();
  });

  it("answers 503 CHAIN_UNAVAILABLE with settled:false while the RPC hangs, and the note settles once it is back", async function () {
    const request = { paymentDetails: { payTo: payee, maxAmountRequired: "1000000" }, serviceDeposit: serviceDeposit(note) };
    rpc.switchOff();
    const refused = await relayer.post(SETTLE, request);
    expect(refused.status, JSON.stringify(refused.body)).to.equal(503);
    expect(refused.body).to.deep.include({ settled: false, code: "CHAIN_UNAVAILABLE" });
    expect(refused.body.error).to.contain("nothing was spent");
    expect(rpc.heldRequests, "the relayer asked the hung RPC and gave up on it").to.be.above(0);
    expect(await chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(note.nullifier))).to.equal(false);

    rpc.switchOn();
    const payeeBefore = await chain.facilitator.usdc.balanceOf(payee);
    const settled = await relayer.post(SETTLE, request);
    expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
    expect(settled.body).to.deep.include({ settled: true, amount: "1000000", fee: "0", remainingValue: "2000000" });
    expect(await chain.facilitator.usdc.balanceOf(payee)).to.equal(payeeBefore + 1_000_000n);
  });
});
