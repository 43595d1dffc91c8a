import { expect } from "chai";
import { Wallet } from "ethers";
import { DEFAULT_TAB_DEPOSIT_ATOMIC } from "../../sdk/agent/index.js";
import { FacilitatorClient, FacilitatorError } from "../../sdk/client/facilitator-client.js";
import { grossForNet } from "../../sdk/fees/relay-fee.js";
import { rejectionOf } from "../sdk/agent/helpers/rejection.js";
import { deposit as depositInPool } from "../indexer/helpers/pool-actions.js";
import { startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";
import { startRecordingProxy } from "./helpers/recording-proxy.js";

const USDC = 1_000_000n;
const TAKE_BPS = 500n;
const OTHER_DEPOSITORS = 30;

/**
 * The pool of the example: 30 independent depositors at the 1 USDC minimum, one operator-affiliated address
 * at 5 USDC, and the agent at 2 USDC. A payment whose gross is above 1 USDC can only come from the agent's deposit
 * (the operator's is not counted): it is not private, whatever the pool's whole set says.
 */
describe("a payment's own anonymity set: the depositors whose approved, on-chain deposits could have funded it", function () {
  const operatorDepositor = Wallet.createRandom();
  let world: PaymentWorld;

  before(async function () {
    this.timeout(300_000);
    world = await startPaymentWorld({
      price: USDC,
      beforeIndexer: async (_chain, indexerConfig) => {
        indexerConfig.operatorAddresses = [operatorDepositor.address];
      },
    });
    const { networkHelpers } = world.chain.connection;
    const depositors = [...Array.from({ length: OTHER_DEPOSITORS }, () => Wallet.createRandom()), operatorDepositor];
    for (const [i, wallet] of depositors.entries()) {
      await networkHelpers.setBalance(wallet.address, 10n ** 18n);
      await depositInPool(world.chain, wallet.connect(world.chain.connection.ethers.provider), 9000 + i, wallet === operatorDepositor ? 5n * USDC : USDC);
    }
    await world.syncIndexer();
  });
  after(async function () {
    await world?.close();
  });

  const facilitator = () => new FacilitatorClient(world.relayer.url);

  it("counts, for each withdrawn value, only the depositors whose deposits hold it, never the operator's address", async function () {
    await world.newAgent(world.chain.depositors.alice, 2n * USDC);
    const small = await facilitator().anonymitySet(50_000n);
    expect(small).to.include({ withdrawnValue: "50000", private: true, anonymitySet: OTHER_DEPOSITORS + 1, minimumForPrivacy: 30 });

    const gross = grossForNet(USDC, TAKE_BPS);
    expect(gross).to.equal(1_052_631n);
    const large = await facilitator().anonymitySet(gross);
    expect(large).to.include({ private: false, anonymitySet: 1 });

    // The tab's default opening withdraws no more than the minimum deposit: every depositor could have funded it.
    const tabOpening = grossForNet(DEFAULT_TAB_DEPOSIT_ATOMIC, TAKE_BPS);
    expect(tabOpening).to.equal(999_999n);
    expect(await facilitator().anonymitySet(tabOpening)).to.include({ private: true, anonymitySet: OTHER_DEPOSITORS + 1 });
  });

  it("counts an approval only once its ASP root is on chain", async function () {
    const before = (await facilitator().anonymitySet(USDC)).anonymitySet!;
    const newcomer = Wallet.createRandom();
    await world.chain.connection.networkHelpers.setBalance(newcomer.address, 10n ** 18n);
    await depositInPool(world.chain, newcomer.connect(world.chain.connection.ethers.provider), 9900);
    await world.indexer.indexer.sync.catchUp();
    expect(world.indexer.indexer.curator.status().aspRootMatches).to.equal(false);
    expect((await facilitator().anonymitySet(USDC)).anonymitySet).to.equal(before);
    await world.syncIndexer();
    expect((await facilitator().anonymitySet(USDC)).anonymitySet).to.equal(before + 1);
  });

  it("an agent that does not accept a payment that is not private pays nothing when the payment's value leaves one possible deposit", async function () {
    const proxy = await startRecordingProxy(world.relayer.url, (_path, answer) => answer);
    try {
      const { agent, vault, deposit, events } = await world.newAgent(world.chain.depositors.bob, 2n * USDC, {
        facilitator: new FacilitatorClient(proxy.url),
        acceptNotPrivate: false,
        maxPaymentAtomic: USDC,
      });
      const poolBefore = await world.poolBalance();
      const refused = await rejectionOf(agent.fetch(world.sellers.v2.resourceUrl));
      expect(refused).to.have.property("code", "PRIVACY_NOT_ACKNOWLEDGED");
      expect(refused.message).to.contain("withdrawing 1052631 atomic USDC could have come from 2 independent depositor(s)");
      const asked = proxy.requests.map((request) => new URL(request.url, "http://x").pathname);
      expect(asked).to.include("/api/facilitator/anonymity-set");
      expect(asked.filter((url) => url.startsWith("/api/facilitator/quote") || url.startsWith("/api/facilitator/settle"))).to.deep.equal([]);
      expect(events.map((event) => event.step)).to.not.include("proved");
      expect(await world.poolBalance()).to.equal(poolBefore);
      expect(await world.unspentNotes(vault)).to.deep.equal([deposit.note]);
    } finally {
      await proxy.close();
    }
  });

  it("the relayer judges a custodial settle by its own value too: PRIVACY_NOT_ACKNOWLEDGED, nothing spent", async function () {
    const { agent, vault, deposit } = await world.newAgent(world.chain.depositors.carol, 2n * USDC, {
      custody: "custodial",
      acceptNotPrivate: false,
      maxPaymentAtomic: USDC,
    });
    const poolBefore = await world.poolBalance();
    const refused = await rejectionOf(agent.fetch(world.sellers.v2.resourceUrl));
    expect(refused).to.be.instanceOf(FacilitatorError);
    expect(refused).to.include({ status: 412, code: "PRIVACY_NOT_ACKNOWLEDGED" });
    expect(await world.poolBalance()).to.equal(poolBefore);
    expect(await world.unspentNotes(vault)).to.deep.equal([deposit.note]);
  });
});
