import { expect } from "chai";
import { Wallet } from "ethers";
import { connectPoolChain } from "../../relayer/chain/connect-chain.js";
import type { PoolChain } from "../../relayer/chain/pool-chain.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { buildRelayerConfig, relayerKey, serviceDeposit, startRelayer, type RunningRelayer } from "./helpers/relayer-harness.js";

describe("the relaying party's transactions", function () {
  let chain: LocalChain;

  before(async function () {
    chain = await startLocalChain();
  });

  after(async function () {
    await chain.close();
  });

  describe("sent at once", function () {
    let pool: PoolChain;

    before(async function () {
      ({ chain: pool } = await connectPoolChain({
        rpcUrl: chain.rpc.url,
        relayerPrivateKey: relayerKey.privateKey,
        addressBook: chain.addressBookFile,
        rpcTimeoutMs: 10_000,
      }));
    });

    after(function () {
      pool.provider.destroy();
    });

    it("leave in nonce order, so a node that cannot queue a nonce gap takes them all", async function () {
      const first = await chain.connection.ethers.provider.getTransactionCount(relayerKey.address);
      const recipients = Array.from({ length: 8 }, () => Wallet.createRandom().address);
      const sent = await Promise.all(recipients.map((to) => pool.sendFromRelayer({ to, value: 1n })));
      const receipts = await Promise.all(sent.map((tx) => tx.wait()));

      expect(sent.map((tx) => tx.nonce)).to.deep.equal(recipients.map((_, i) => first + i));
      expect(receipts.map((receipt) => receipt?.status)).to.deep.equal(recipients.map(() => 1));
      for (const to of recipients) expect(await chain.connection.ethers.provider.getBalance(to)).to.equal(1n);
    });
  });

  describe("relays at one state tree depth", function () {
    let indexer: RunningIndexer;
    let relayer: RunningRelayer;
    let tag = 500;

    const depositUntil = async (size: number) => {
      const notes = [];
      while ((await chain.facilitator.privacyPool.currentTreeSize()) < BigInt(size)) notes.push(await deposit(chain, chain.depositors.dave, tag++));
      // Dozens of inserts in a few blocks are a flood, in which every insert also keeps the root leaving the ring
      // (StateTree): two root lifetimes later the relay's insert is an ordinary one.
      await chain.connection.networkHelpers.mine(2n * (await chain.facilitator.privacyPool.ROOT_MIN_LIFETIME_BLOCKS()));
      await indexer.indexer.sync.catchUp();
      await indexer.indexer.curator.publish();
      await indexer.indexer.sync.catchUp();
      return notes;
    };
    const settle = async (note: Parameters<typeof serviceDeposit>[0]) => {
      const paymentDetails = { scheme: "exact", payTo: Wallet.createRandom().address, maxAmountRequired: "100000", networkId: "eip155:31337" };
      return relayer.post("/api/facilitator/settle", { paymentDetails, serviceDeposit: serviceDeposit(note) });
    };

    before(async function () {
      indexer = await startIndexer(buildIndexerConfig(chain));
      relayer = await startRelayer(buildRelayerConfig(chain, indexer));
    });

    after(async function () {
      await relayer?.stop();
      await indexer?.stop();
    });

    it("have the gas for an insert that hashes every level, after one that hashed two", async function () {
      // Depth 7 holds 65 to 128 leaves. The change note of the first relay goes to leaf 65 (0b1000001: two levels
      // hashed), where the relayer estimates this depth's gas; the second's to leaf 127 (0b1111111: all seven).
      const [cheap] = await depositUntil(65);
      const first = await settle(cheap!);
      expect(first.status, JSON.stringify(first.body)).to.equal(200);
      const [costly] = await depositUntil(127);
      const second = await settle(costly!);
      expect(second.status, JSON.stringify(second.body)).to.equal(200);

      const gasUsed = async (body: Record<string, unknown>) => (await chain.connection.ethers.provider.getTransactionReceipt(body.txHash as string))!.gasUsed;
      // Five hashes more (a Poseidon2 and a cold side-node read, about 12k gas each), less the five side-node stores
      // (about 5k each) they replace.
      expect(await gasUsed(second.body), "the second insert hashes five levels more").to.be.greaterThan((await gasUsed(first.body)) + 30_000n);
    });
  });
});
