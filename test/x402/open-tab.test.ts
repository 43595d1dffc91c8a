import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme, InMemoryClientChannelStorage } from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { expect } from "chai";
import { hexlify, randomBytes, Wallet } from "ethers";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { grossForNet } from "../../relayer/pricing/pricing.js";
import { expiredPayersWaiting, sweepExpiredPayers } from "../../relayer/x402/payer-sweep.js";
import { proveLocally } from "../../sdk/agent/index.js";
import { FacilitatorClient, type OpenTabAnswer, type QuoteTabAnswer } from "../../sdk/client/facilitator-client.js";
import { createNote, deriveRefundSecrets, nullifierHashOf, type Note } from "../../sdk/index.js";
import { sharedProver } from "../../sdk/prover/index.js";
import type { BatchSettlementRequirement } from "../../sdk/x402/batch-settlement.js";
import { WEATHER_REPORT } from "../../x402-peers/seller.js";
import { startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";
import { startRecordingProxy, type RecordingProxy } from "./helpers/recording-proxy.js";

const OPEN_TAB = "/api/facilitator/open-tab";
const PRICE = 1_000n;
const DEPOSIT = 100_000n;
const NOTE_VALUE = 1_000_000n;
const LIFETIME_SECONDS = 86_400;

describe("the relayer opens private tabs: quote-tab and open-tab (docs/api.md 4.11)", function () {
  let world: PaymentWorld;
  let tabSeller: Awaited<ReturnType<PaymentWorld["startTabSeller"]>>;
  let otherSeller: Awaited<ReturnType<PaymentWorld["startTabSeller"]>>;
  let takeBps: bigint;
  let entrypoint: string;

  before(async function () {
    world = await startPaymentWorld();
    [tabSeller, otherSeller] = [await world.startTabSeller({ price: PRICE }), await world.startTabSeller({ price: PRICE })];
    takeBps = BigInt((await new FacilitatorClient(world.relayer.url).supported()).settleX402!.takeBps);
    entrypoint = await world.chain.facilitator.entrypoint.getAddress();
  });
  after(async function () {
    await Promise.all([tabSeller?.close(), otherSeller?.close()]);
    await world?.close();
  });

  /** A seller's batch-settlement entry and resource, from its unpaid 402. */
  async function entryOf(seller: { resourceUrl: string }) {
    const response = await fetch(seller.resourceUrl);
    expect(response.status).to.equal(402);
    const required = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED") ?? "");
    const accepted = required.accepts.find((entry) => entry.scheme === "batch-settlement")!;
    return { accepted: accepted as unknown as BatchSettlementRequirement, resource: required.resource };
  }

  /** A tab the agent asks for: its voucher key and channel salt, and the open-tab body proven here against a quote-tab quote. */
  async function provenTab(note: Note, seller = tabSeller, facilitator = new FacilitatorClient(world.relayer.url)) {
    const { accepted, resource } = await entryOf(seller);
    const tabKey = Wallet.createRandom();
    const salt = hexlify(randomBytes(32));
    const reclaimableAfter = BigInt(Math.floor(Date.now() / 1000) + LIFETIME_SECONDS);
    const tab = { accepted, payerAuthorizer: tabKey.address, salt, reclaimableAfter };
    const { body, quoted } = await proveLocally({
      facilitator,
      prover: sharedProver(),
      note,
      expected: { route: "open-tab", withdrawnValue: grossForNet(DEPOSIT, takeBps), feeBps: takeBps, processooor: entrypoint, tab },
      fields: { accepts: accepted, payerAuthorizer: tabKey.address, salt, depositAmount: DEPOSIT.toString(), reclaimableAfter: Number(reclaimableAfter), acceptNotPrivate: true },
    });
    return { body, quoted: quoted as QuoteTabAnswer, tabKey, accepted, resource };
  }

  async function newNote(): Promise<Note> {
    const { deposit } = await world.newAgent(world.chain.depositors.alice, NOTE_VALUE);
    return deposit.note;
  }

  const withdrawalsOf = async (note: Note) => {
    const pool = world.chain.facilitator.privacyPool;
    return (await pool.queryFilter(pool.filters.Withdrawn())).filter((event) => event.args.spentNullifierHash === nullifierHashOf(note.nullifier));
  };

  /**
   * Pays `count` requests on an opened tab with @x402/evm's client scheme unchanged: vouchers of the tab's key only,
   * never a deposit (the relay made it); the client finds the channel funded on chain.
   */
  async function payRequests(opened: OpenTabAnswer, tab: Awaited<ReturnType<typeof provenTab>>, count = 1, storage = new InMemoryClientChannelStorage()) {
    const voucherSigner = toClientEvmSigner(privateKeyToAccount(tab.tabKey.privateKey as `0x${string}`));
    const publicClient = createPublicClient({ transport: http(world.chain.rpc.url) });
    const payerSigner = toClientEvmSigner(
      { address: opened.payer as `0x${string}`, signTypedData: () => Promise.reject(new Error("a tab's payer is a contract and signs nothing")) },
      publicClient,
    );
    const scheme = new BatchSettlementEvmScheme(payerSigner, { voucherSigner, storage, salt: tab.body.salt as `0x${string}`, depositStrategy: () => false });
    const network = tab.accepted.network as `${string}:${string}`;
    const client = x402Client.fromConfig({
      schemes: [{ network, client: scheme }],
      spendControls: { allowedAssets: [{ network, asset: tab.accepted.asset, maxAmountPerPayment: PRICE.toString() }] },
    });
    const fetchPaid = wrapFetchWithPayment(fetch, client);
    for (let i = 0; i < count; i++) {
      const response = await fetchPaid(tabSeller.resourceUrl);
      expect(response.status, await response.clone().text()).to.equal(200);
      expect(await response.json()).to.deep.equal(WEATHER_REPORT);
    }
  }

  it("refuses a stranger's copy of the quote and proof sent for another channel, another seller or another voucher key: the proof binds the channel, nothing is spent", async function () {
    const note = await newNote();
    const tab = await provenTab(note);
    const other = await entryOf(otherSeller);
    const attempts = {
      "another salt": { ...tab.body, salt: hexlify(randomBytes(32)) },
      "another voucher key": { ...tab.body, payerAuthorizer: Wallet.createRandom().address },
      "another seller": { ...tab.body, accepts: other.accepted },
      "a channel of the stranger's choosing, the quote edited to match": {
        ...tab.body,
        salt: hexlify(randomBytes(32)),
        quote: { ...tab.body.quote, paymentNonce: hexlify(randomBytes(32)) },
      },
    };
    for (const [what, body] of Object.entries(attempts)) {
      const answer = await world.relayer.post(OPEN_TAB, body);
      expect(answer.status, what).to.equal(400);
      expect(answer.body, what).to.include({ code: "INVALID_REQUEST", settled: false, opened: false });
      expect(String(answer.body.error), what).to.match(/paymentNonce|not one this facilitator issued/);
    }
    expect(await withdrawalsOf(note)).to.have.length(0);
    expect(await world.usdcBalance(tab.quoted.payer)).to.equal(0n);

    // The agent's own request still opens the tab it quoted.
    const opened = await world.relayer.post(OPEN_TAB, tab.body);
    expect(opened.status).to.equal(200);
    expect(opened.body.channelId).to.equal(tab.quoted.channelId);
  });

  it("opens a tab with one relay that spends the note and funds the channel, whose payer is the note's TabPayer; the tab's key pays every request; a replay answers the same and moves nothing", async function () {
    const note = await newNote();
    const tab = await provenTab(note);
    const pool = await world.poolBalance();
    const answer = await world.relayer.post(OPEN_TAB, tab.body);
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    const opened = answer.body as unknown as OpenTabAnswer;
    expect(opened).to.include({ opened: true, replayed: false, payer: tab.quoted.payer, channelId: tab.quoted.channelId, gross: grossForNet(DEPOSIT, takeBps).toString() });
    expect(opened.payer).to.equal(await world.chain.facilitator.entrypoint.tabPayerOf(nullifierHashOf(note.nullifier)));
    expect(opened.reclaimableAfter).to.equal(tab.quoted.reclaimableAfter);
    expect(await tabSeller.settlement.channels(opened.channelId)).to.deep.equal([DEPOSIT, 0n]);
    expect(await world.usdcBalance(opened.payer)).to.equal(0n);
    expect(pool - (await world.poolBalance())).to.equal(grossForNet(DEPOSIT, takeBps));

    const replay = await world.relayer.post(OPEN_TAB, tab.body);
    expect(replay.status).to.equal(200);
    expect(replay.body).to.deep.equal({ ...opened, replayed: true });
    expect(await withdrawalsOf(note)).to.have.length(1);
    expect(await tabSeller.settlement.channels(opened.channelId)).to.deep.equal([DEPOSIT, 0n]);

    const served = tabSeller.served();
    await payRequests(opened, tab, 6);
    expect(tabSeller.served() - served).to.equal(6);
    await tabSeller.channels.claimAndSettle();
    expect(await world.usdcBalance(tabSeller.payTo)).to.equal(6n * PRICE);

    const late = await world.relayer.post(OPEN_TAB, tab.body);
    expect(late.body).to.deep.equal({ ...opened, replayed: true });
    expect(await withdrawalsOf(note)).to.have.length(1);
  });

  it("answers the opened tab to the retry of an open-tab whose answer was lost after the relay", async function () {
    let lost = false;
    const proxy: RecordingProxy = await startRecordingProxy(world.relayer.url, (path, answer) => {
      if (path !== OPEN_TAB || lost) return answer;
      lost = true;
      throw new Error("the answer is lost on its way to the agent");
    });
    try {
      const note = await newNote();
      const facilitator = new FacilitatorClient(proxy.url);
      const tab = await provenTab(note, tabSeller, facilitator);
      await facilitator.openTab(tab.body).then(
        () => expect.fail("the first answer should be lost"),
        () => undefined,
      );
      expect(lost).to.equal(true);
      expect(await withdrawalsOf(note)).to.have.length(1);

      const retried = await facilitator.openTab(tab.body);
      expect(retried).to.include({ opened: true, replayed: true, channelId: tab.quoted.channelId });
      expect(await withdrawalsOf(note)).to.have.length(1);
      expect(await tabSeller.settlement.channels(retried.channelId)).to.deep.equal([DEPOSIT, 0n]);
      await payRequests(retried, tab);
    } finally {
      await proxy.close();
    }
  });

  it("refuses a tab the seller's facilitator would refuse, before anything is proven", async function () {
    const note = await newNote();
    const { accepted } = await entryOf(tabSeller);
    const quote = (body: object) => world.relayer.post("/api/facilitator/quote-tab", body);
    const base = {
      accepts: accepted,
      payerAuthorizer: Wallet.createRandom().address,
      salt: hexlify(randomBytes(32)),
      depositAmount: DEPOSIT.toString(),
      reclaimableAfter: Math.floor(Date.now() / 1000) + LIFETIME_SECONDS,
      acceptNotPrivate: true,
      nullifierHash: nullifierHashOf(note.nullifier).toString(),
    };
    const refusals: [string, object, string, RegExp][] = [
      ["a deposit under the minimum settle", { ...base, depositAmount: "1000" }, "BELOW_MINIMUM_SETTLE", /minimum settle/],
      ["a deposit under one request's price", { ...base, accepts: { ...accepted, amount: "200000" } }, "INVALID_PAYMENT_AMOUNT", /price of one request/],
      ["another network", { ...base, accepts: { ...accepted, network: "eip155:1" } }, "INVALID_REQUEST", /accepts.network/],
      ["another asset", { ...base, accepts: { ...accepted, asset: Wallet.createRandom().address } }, "INVALID_REQUEST", /accepts.asset/],
      ["no receiver authorizer", { ...base, accepts: { ...accepted, extra: { ...accepted.extra, receiverAuthorizer: undefined } } }, "INVALID_REQUEST", /receiverAuthorizer/],
      ["a withdraw delay the contract refuses", { ...base, accepts: { ...accepted, extra: { ...accepted.extra, withdrawDelay: 60 } } }, "INVALID_REQUEST", /withdrawDelay/],
      ["a withdraw delay above the entrypoint's 7 days", { ...base, accepts: { ...accepted, extra: { ...accepted.extra, withdrawDelay: 8 * 86_400 } } }, "INVALID_REQUEST", /withdrawDelay/],
      ["a lifetime already over", { ...base, reclaimableAfter: Math.floor(Date.now() / 1000) - 1 }, "INVALID_REQUEST", /reclaimableAfter/],
      ["a lifetime beyond 30 days", { ...base, reclaimableAfter: Math.floor(Date.now() / 1000) + 31 * 86_400 }, "INVALID_REQUEST", /reclaimableAfter/],
      ["a domain the token does not sign under", { ...base, accepts: { ...accepted, extra: { ...accepted.extra, name: "USD Coin" } } }, "INVALID_REQUEST", /EIP-712 domain/],
    ];
    for (const [what, body, code, message] of refusals) {
      const answer = await quote(body);
      expect(answer.status, what).to.equal(400);
      expect(answer.body.code, what).to.equal(code);
      expect(String(answer.body.error), what).to.match(message);
    }
    const quoted = await quote(base);
    expect(quoted.status, JSON.stringify(quoted.body)).to.equal(200);
  });

  // Last: the chain's clock moves past the tab's withdrawal delay.
  it("sweeps a drained tab back into the pool as the agent's refund note, with no role and no key: the rest after the seller's claims at once, a tab never claimed once its key withdrew it", async function () {
    const { entrypoint: pool, usdc } = world.chain.facilitator;
    const { networkHelpers, ethers } = world.chain.connection;
    const { store, chain } = world.relayer.relayer;
    for (const role of [await pool.DEFAULT_ADMIN_ROLE(), await pool.POSTMAN_ROLE()]) expect(await pool.hasRole(role, chain.relayer.address), "the relaying key holds no role").to.equal(false);
    const sweep = async () => {
      const { records, failures } = await sweepExpiredPayers({ store, chain });
      expect(failures).to.deep.equal([]);
      return records;
    };
    const openAndPay = async () => {
      const note = await newNote();
      const tab = await provenTab(note);
      const opened = (await world.relayer.post(OPEN_TAB, tab.body)).body as unknown as OpenTabAnswer;
      await payRequests(opened, tab);
      return { note, tab, opened };
    };
    const unclaimed = await openAndPay();
    const claimed = await openAndPay();
    const ofClaimed = (channel: { channelId: string }) => channel.channelId.toLowerCase() === claimed.opened.channelId.toLowerCase();
    await tabSeller.channels.claimAndSettle({ selectClaimChannels: (channels) => channels.filter(ofClaimed) });
    await tabSeller.channels.refund([claimed.opened.channelId]);
    expect(await tabSeller.settlement.channels(claimed.opened.channelId)).to.deep.equal([PRICE, PRICE]);

    const poolAddress = await world.chain.facilitator.privacyPool.getAddress();
    const poolBefore = await usdc.balanceOf(poolAddress);
    const early = await sweep();
    // The unclaimed tab's channel still holds its deposit, within its lifetime: nothing moves, and it waits.
    expect(early.filter((record) => record.payer === unclaimed.opened.payer)).to.deep.equal([]);
    // The claimed tab's seller refunded the rest: the deposit less its claim comes back as the agent's note.
    const rest = DEPOSIT - PRICE;
    const restSwept = early.filter((record) => record.payer === claimed.opened.payer);
    expect(restSwept.map(({ outcome, amount }) => ({ outcome, amount }))).to.deep.equal([{ outcome: "deposited", amount: rest }]);
    const depositedEarly = early.filter((record) => record.outcome === "deposited").reduce((sum, record) => sum + record.amount, 0n);
    expect((await usdc.balanceOf(poolAddress)) - poolBefore).to.equal(depositedEarly);
    expect(await world.usdcBalance(claimed.opened.payer)).to.equal(0n);
    const restNote = createNote(rest, claimed.note.label, deriveRefundSecrets(claimed.note), "refund");
    const restDeposited = await pool.queryFilter(pool.filters.RefundDeposited(claimed.opened.payer));
    expect(restDeposited.map((event) => [event.args.commitment, event.args.value])).to.deep.equal([[restNote.commitment, rest]]);
    // What is left unswept is tabs whose channel holds their deposit: they wait for the tab, not for the sweep.
    expect(await expiredPayersWaiting({ store, chain })).to.equal(0);

    const tabKey = unclaimed.tab.tabKey.connect(ethers.provider);
    await networkHelpers.setBalance(tabKey.address, 10n ** 17n);
    const settlement = tabSeller.settlement.connect(tabKey);
    await (await settlement.initiateWithdraw(unclaimed.opened.channelConfig, DEPOSIT)).wait();
    await networkHelpers.time.increase(unclaimed.opened.channelConfig.withdrawDelay);
    await (await settlement.finalizeWithdraw(unclaimed.opened.channelConfig)).wait();
    expect(await world.usdcBalance(unclaimed.opened.payer)).to.equal(DEPOSIT);
    expect(await expiredPayersWaiting({ store, chain })).to.equal(1);

    const pool0 = await usdc.balanceOf(poolAddress);
    const swept = (await sweep()).filter((record) => record.payer === unclaimed.opened.payer);
    expect(swept.map(({ outcome, amount }) => ({ outcome, amount }))).to.deep.equal([{ outcome: "deposited", amount: DEPOSIT }]);
    expect((await usdc.balanceOf(poolAddress)) - pool0).to.equal(DEPOSIT);
    const refund = createNote(DEPOSIT, unclaimed.note.label, deriveRefundSecrets(unclaimed.note), "refund");
    const deposited = await pool.queryFilter(pool.filters.RefundDeposited(unclaimed.opened.payer));
    expect(deposited.map((event) => event.args.commitment)).to.deep.equal([refund.commitment]);
    expect(await world.usdcBalance(unclaimed.opened.payer)).to.equal(0n);
    expect((await sweep()).filter((record) => [unclaimed.opened.payer, claimed.opened.payer].includes(record.payer))).to.deep.equal([]);
    expect(await expiredPayersWaiting({ store, chain })).to.equal(0);
  });
});
