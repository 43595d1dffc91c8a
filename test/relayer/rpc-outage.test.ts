import { expect } from "chai";
import { nullifierHashOf, type Note } from "../../sdk/index.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { buildRelayerConfig, serviceDeposit, startRelayer, type RunningRelayer } from "./helpers/relayer-harness.js";
import { startSwitchableRpc, type RpcMode, type SwitchableRpc } from "./helpers/switchable-rpc.js";

const payee = "0x000000000000000000000000000000000000bEEF";
const SETTLE = "/api/facilitator/settle";

describe("relayer: a chain RPC outage during settle", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  let rpc: SwitchableRpc;
  let relayer: RunningRelayer;
  let tag = 201;

  /** A fresh, ASP-approved note. */
  const freshNote = async (): Promise<Note> => {
    const note = await deposit(chain, chain.depositors.alice, tag++, 3_000_000n);
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    return note;
  };

  before(async function () {
    chain = await startLocalChain();
    indexer = await startIndexer(buildIndexerConfig(chain));
    rpc = await startSwitchableRpc(chain.rpc.url);
    // A short RPC timeout: a hung RPC answers CHAIN_UNAVAILABLE in a second, not in ethers' five minutes.
    relayer = await startRelayer(buildRelayerConfig(chain, indexer, { rpcUrl: rpc.url, rpcTimeoutMs: "1000" }));
  });

  afterEach(async function () {
    await rpc.setMode("forward");
  });

  after(async function () {
    await relayer?.stop();
    await rpc?.close();
    await indexer?.stop();
    await chain?.close();
  });

  it("answers 202 with the hash, never 'nothing was spent', when the RPC hangs after the relay was sent; then replays it", async function () {
    const note = await freshNote();
    const request = { paymentDetails: { payTo: payee, maxAmountRequired: "1000000" }, serviceDeposit: serviceDeposit(note) };
    const provider = chain.connection.provider;
    await provider.request({ method: "evm_setAutomine", params: [false] });
    try {
      const answering = relayer.post(SETTLE, request);
      // The hash is recorded before the relay leaves: the outage starts once the node itself holds the relay.
      let fundingTxHash: string | null = null;
      while (fundingTxHash === null || (await provider.request({ method: "eth_getTransactionByHash", params: [fundingTxHash] })) === null) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        fundingTxHash = (await relayer.relayer.store.getLease(nullifierHashOf(note.nullifier)))?.fundingTxHash ?? null;
      }
      await rpc.setMode("hang");
      const uncertain = await answering;
      expect(uncertain.status, JSON.stringify(uncertain.body)).to.equal(202);
      expect(uncertain.body).to.deep.include({ settled: false, code: "SETTLEMENT_UNCERTAIN", fundingTxHash });
      expect(uncertain.body.error).to.not.contain("nothing was spent");

      await rpc.setMode("forward");
      await provider.request({ method: "evm_mine", params: [] });
      const replayed = await relayer.post(SETTLE, request);
      expect(replayed.status, JSON.stringify(replayed.body)).to.equal(200);
      expect(replayed.body).to.deep.include({ settled: true, txHash: fundingTxHash, replayed: true });
    } finally {
      await provider.request({ method: "evm_setAutomine", params: [true] });
    }
  });

  const outages: [RpcMode, string][] = [
    ["hang", "hangs"],
    ["refuse", "refuses connections (ECONNREFUSED)"],
    ["reset", "resets connections (ECONNRESET)"],
    ["call-error", "answers eth_call with JSON-RPC error -32005 and no revert data"],
  ];
  for (const [mode, what] of outages) {
    it(`answers 503 CHAIN_UNAVAILABLE, nothing spent, while the RPC ${what}; the note settles once it is back`, async function () {
      const note = await freshNote();
      const request = { paymentDetails: { payTo: payee, maxAmountRequired: "1000000" }, serviceDeposit: serviceDeposit(note) };
      const heldBefore = rpc.heldRequests;
      await rpc.setMode(mode);
      const refused = await relayer.request(SETTLE, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(request),
      });
      expect(refused.status, JSON.stringify(refused.body)).to.equal(503);
      expect(refused.body).to.deep.include({ settled: false, code: "CHAIN_UNAVAILABLE" });
      expect(refused.body.error).to.contain("nothing was spent");
      expect(Number(refused.headers.get("retry-after"))).to.be.above(0);
      if (mode === "hang") expect(rpc.heldRequests, "the relayer asked the hung RPC and gave up on it").to.be.above(heldBefore);
      expect(await chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(note.nullifier))).to.equal(false);

      await rpc.setMode("forward");
      const payeeBefore = await chain.facilitator.usdc.balanceOf(payee);
      const settled = await relayer.post(SETTLE, request);
      expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
      expect(settled.body).to.deep.include({ settled: true, replayed: false, amount: "1000000", fee: "0", remainingValue: "2000000" });
      expect(await chain.facilitator.usdc.balanceOf(payee)).to.equal(payeeBefore + 1_000_000n);
    });
  }
});
