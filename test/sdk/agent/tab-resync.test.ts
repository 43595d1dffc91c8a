import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import { getChannel } from "@x402/evm/batch-settlement/client";
import { FileClientChannelStorage } from "@x402/evm/batch-settlement/client/file-storage";
import { expect } from "chai";
import { hexlify, randomBytes, Wallet, type Signer } from "ethers";
import { PrivateTabs, type OpenTab } from "../../../sdk/agent/private-tab.js";
import type { StoredTab, TabStore } from "../../../sdk/agent/tab-record.js";
import { tabChannelOf, type BatchSettlementRequirement } from "../../../sdk/x402/batch-settlement.js";
import { signVoucher as signVoucherOn } from "../../contracts/helpers/channels.js";

const PRICE = 1_000n;
const DEPOSIT = 100_000n;
const CHAIN_ID = 31337n;
const CUMULATIVE_AMOUNT_MISMATCH = "invalid_batch_settlement_evm_cumulative_amount_mismatch";

/** The tab key's voucher of `amount` on `channelId`, on the test chain. */
const signVoucher = (key: Signer, channelId: string, amount: bigint) => signVoucherOn(key, CHAIN_ID, channelId, amount);

/** A tab store in memory: what the vault keeps, without the encryption. */
class MemoryTabStore implements TabStore {
  readonly tabs = new Map<string, StoredTab>();
  async tab(seller: string) {
    return this.tabs.get(seller);
  }
  async saveTab(tab: StoredTab) {
    this.tabs.set(tab.seller, tab);
  }
}

/** What a seller holds for the channel, as @x402/evm's server names it in its corrective 402. */
interface SellerView {
  channelId: string;
  charged: bigint;
  signed: bigint;
  signature: string;
}

/** How the seller answers a payment: served, its answer lost, a 500, refused for `refuse`, or a corrective 402. */
type SellerAnswer = SellerView | "paid" | "lost" | "failed" | { refuse: string };

/**
 * A seller that answers each payment with `answer`: a corrective 402 naming `view` (its running total and the voucher
 * it claims to hold), or 200. It keeps the payloads it was sent.
 */
async function startSeller(accepted: { extra: Record<string, unknown> }) {
  const payloads: { type: string; voucher: { maxClaimableAmount: string } }[] = [];
  let answer: (sent: number) => Promise<SellerAnswer> = async () => "paid";
  const server: Server = createServer(async (request, response) => {
    const header = request.headers["payment-signature"];
    if (typeof header === "string") payloads.push(decodePaymentSignatureHeader(header).payload as (typeof payloads)[number]);
    const decided = await answer(payloads.length);
    if (decided === "lost") {
      // The seller took the payment, and its answer never reaches the agent.
      request.socket.destroy();
      return;
    }
    if (decided === "failed") {
      response.writeHead(500, { "content-type": "text/plain" }).end("internal error");
      return;
    }
    if (typeof decided === "object" && "refuse" in decided) {
      const required = { x402Version: 2, error: decided.refuse, resource: { url: "", description: "", mimeType: "" }, accepts: [accepted] };
      response.writeHead(402, { "PAYMENT-REQUIRED": encodePaymentRequiredHeader(required as never) }).end("{}");
      return;
    }
    if (decided === "paid") {
      // As @x402/evm's server answers a paid voucher: the charge and the running total it reached.
      const total = payloads.at(-1)?.voucher.maxClaimableAmount ?? "0";
      const settled = { success: true, transaction: "", network: `eip155:${CHAIN_ID}`, extra: { chargedAmount: PRICE.toString(), channelState: { chargedCumulativeAmount: total } } };
      response.writeHead(200, { "content-type": "application/json", "PAYMENT-RESPONSE": encodePaymentResponseHeader(settled as never) }).end("{}");
      return;
    }
    const entry = {
      ...accepted,
      extra: {
        ...accepted.extra,
        // The balance claimed is ten deposits: the agent never takes the seller's word for it.
        channelState: { channelId: decided.channelId, balance: (10n * DEPOSIT).toString(), totalClaimed: "0", chargedCumulativeAmount: decided.charged.toString() },
        voucherState: { signedMaxClaimable: decided.signed.toString(), signature: decided.signature },
      },
    };
    const required = { x402Version: 2, error: CUMULATIVE_AMOUNT_MISMATCH, resource: { url: "", description: "", mimeType: "" }, accepts: [entry] };
    response.writeHead(402, { "PAYMENT-REQUIRED": encodePaymentRequiredHeader(required as never) }).end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/report`;
  return {
    url,
    payloads,
    answerWith(next: (sent: number) => Promise<SellerAnswer>) {
      answer = next;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("a private tab takes a seller's corrective 402 only for a payment it sent and never saw answered, signed by its own key", function () {
  const payTo = Wallet.createRandom().address;
  const entry = {
    scheme: "batch-settlement" as const,
    network: `eip155:${CHAIN_ID}`,
    asset: Wallet.createRandom().address,
    amount: PRICE.toString(),
    maxTimeoutSeconds: 60,
    extra: { receiverAuthorizer: Wallet.createRandom().address, withdrawDelay: 900, name: "USDC", version: "2" },
  };
  let seller: Awaited<ReturnType<typeof startSeller>>;
  let accepted: BatchSettlementRequirement;

  before(async function () {
    seller = await startSeller(entry);
    accepted = { ...entry, payTo };
  });
  after(async function () {
    await seller.close();
  });

  /** A fresh agent's tabs, whose opening the facilitator answered as open-tab does: the channel the agent asked for, funded. */
  function agentTabs() {
    const store = new MemoryTabStore();
    const channelDirectory = mkdtempSync(path.join(tmpdir(), "tab-resync-"));
    const payer = Wallet.createRandom().address;
    const open: OpenTab = async ({ payerAuthorizer, salt, depositAtomic, reclaimableAfter }) => {
      const { channelConfig, channelId } = tabChannelOf({ accepted, payer, payerAuthorizer, salt });
      return { opened: true, payer, channelConfig, channelId, reclaimableAfter: Number(reclaimableAfter), gross: depositAtomic.toString(), fee: "0" } as never;
    };
    const tabs = new PrivateTabs({ store, options: { channelDirectory, depositAtomic: DEPOSIT }, open });
    const pay = () => tabs.pay({ url: seller.url, init: {}, accepted, resource: { url: seller.url, description: "", mimeType: "" } });
    /** The agent's tab as kept, its key, its channel's id and the running totals kept for it. */
    const kept = async () => {
      const tab = [...store.tabs.values()][0]!;
      const channelId = tab.opened!.channelId;
      return { tab, key: new Wallet(tab.tabKey), channelId, channel: await getChannel(new FileClientChannelStorage({ directory: channelDirectory }), channelId) };
    };
    return { pay, kept };
  }

  /** The agent's payment, refused: the error it threw. */
  const refusalOf = (paid: Promise<unknown>) =>
    paid.then(
      () => undefined,
      (error: unknown) => error,
    );
  /** What the seller can claim on chain: the largest total the tab's key signed for it. */
  const claimable = (from: number) => seller.payloads.slice(from).reduce((most, payload) => (BigInt(payload.voucher.maxClaimableAmount) > most ? BigInt(payload.voucher.maxClaimableAmount) : most), 0n);

  it("pays again from the seller's total after an answer it never got, once: the voucher the seller holds is the one it sent", async function () {
    const agent = agentTabs();
    const before = seller.payloads.length;
    // The seller takes the tab's first voucher and serves it; its answer is lost. The agent's next request sends the
    // same voucher again, which the seller answers with its total under that voucher.
    seller.answerWith(async (sent) => {
      if (sent === before + 1) return "lost";
      if (sent !== before + 2) return "paid";
      const { key, channelId } = await agent.kept();
      return { channelId, charged: PRICE, signed: PRICE, signature: await signVoucher(key, channelId, PRICE) };
    });
    expect(await refusalOf(agent.pay())).to.include({ code: "TAB_ANSWER_LOST" });
    expect((await agent.kept()).tab.unanswered).to.deep.equal({ maxClaimableAmount: PRICE.toString() });
    expect((await agent.pay()).status).to.equal(200);

    expect(seller.payloads.slice(before).map((payload) => [payload.type, payload.voucher.maxClaimableAmount])).to.deep.equal([
      ["voucher", PRICE.toString()],
      ["voucher", PRICE.toString()],
      ["voucher", (2n * PRICE).toString()],
    ]);
    const { tab: paid, channel } = await agent.kept();
    expect(paid.unanswered).to.equal(undefined);
    expect(channel).to.deep.include({ chargedCumulativeAmount: (2n * PRICE).toString(), balance: DEPOSIT.toString() });
  });

  it("refuses a corrective 402 quoting the voucher of the request in flight: a seller answering each request once with it is paid one price per request it served", async function () {
    const agent = agentTabs();
    const before = seller.payloads.length;
    // The seller answers every total the first time with a corrective 402 under the voucher just sent for it, and serves
    // the same total presented again.
    const seen = new Set<string>();
    let served = 0;
    seller.answerWith(async (sent) => {
      const total = seller.payloads[sent - 1]!.voucher.maxClaimableAmount;
      if (seen.has(total)) {
        served += 1;
        return "paid";
      }
      seen.add(total);
      const { key, channelId } = await agent.kept();
      return { channelId, charged: BigInt(total), signed: BigInt(total), signature: await signVoucher(key, channelId, BigInt(total)) };
    });
    for (let request = 0; request < 5; request++) {
      const refused = await refusalOf(agent.pay());
      expect(refused).to.include({ code: "TAB_PAYMENT_REFUSED" });
      expect((refused as Error).message).to.contain(CUMULATIVE_AMOUNT_MISMATCH);
      expect((await agent.pay()).status).to.equal(200);
    }
    expect(served).to.equal(5);
    expect(claimable(before)).to.equal(5n * PRICE);
    expect((await agent.kept()).channel).to.deep.include({ chargedCumulativeAmount: (5n * PRICE).toString() });
  });

  it("takes a corrective total once: a second corrective 402 after the request is paid again moves nothing", async function () {
    const agent = agentTabs();
    const before = seller.payloads.length;
    seller.answerWith(async (sent) => {
      if (sent === before + 1) return "lost";
      const { key, channelId } = await agent.kept();
      const total = BigInt(seller.payloads[sent - 1]!.voucher.maxClaimableAmount);
      return { channelId, charged: total, signed: total, signature: await signVoucher(key, channelId, total) };
    });
    expect(await refusalOf(agent.pay())).to.include({ code: "TAB_ANSWER_LOST" });
    expect(await refusalOf(agent.pay())).to.include({ code: "TAB_PAYMENT_REFUSED" });
    expect(seller.payloads.length - before).to.equal(3);
    expect(claimable(before)).to.equal(2n * PRICE);
    const kept = await agent.kept();
    expect(kept.channel).to.deep.include({ chargedCumulativeAmount: PRICE.toString() });
    expect(kept.tab.unanswered).to.equal(undefined);
  });

  for (const [forgery, forge] of [
    ["a voucher of another key", async (_key: Wallet, channelId: string) => ({ channelId, charged: PRICE, signed: PRICE, signature: await signVoucher(Wallet.createRandom(), channelId, PRICE) })],
    ["the tab key's voucher of another channel", async (key: Wallet, channelId: string) => {
      const other = hexlify(randomBytes(32));
      return { channelId, charged: PRICE, signed: PRICE, signature: await signVoucher(key, other, PRICE) };
    }],
    ["a total above what the tab key signed", async (key: Wallet, channelId: string) => ({ channelId, charged: 2n * PRICE, signed: PRICE, signature: await signVoucher(key, channelId, PRICE) })],
    ["a total above the deposit, signed", async (key: Wallet, channelId: string) => ({ channelId, charged: DEPOSIT + PRICE, signed: DEPOSIT + PRICE, signature: await signVoucher(key, channelId, DEPOSIT + PRICE) })],
    ["another total than the unanswered payment's, signed", async (key: Wallet, channelId: string) => ({ channelId, charged: 3n * PRICE, signed: 3n * PRICE, signature: await signVoucher(key, channelId, 3n * PRICE) })],
  ] as const) {
    it(`refuses ${forgery} after an answer it never got: TAB_PAYMENT_REFUSED, the tab's totals unmoved and nothing paid again`, async function () {
      const agent = agentTabs();
      const before = seller.payloads.length;
      seller.answerWith(async (sent) => {
        if (sent === before + 1) return "lost";
        const { key, channelId } = await agent.kept();
        return forge(key, channelId);
      });
      expect(await refusalOf(agent.pay())).to.include({ code: "TAB_ANSWER_LOST" });
      expect(await refusalOf(agent.pay())).to.include({ code: "TAB_PAYMENT_REFUSED" });
      expect(seller.payloads.length - before).to.equal(2);
      const kept = await agent.kept();
      expect(kept.channel).to.deep.include({ chargedCumulativeAmount: "0", balance: DEPOSIT.toString() });
    });
  }

  describe("refusals and outages", function () {
    const INSUFFICIENT_BALANCE = "invalid_batch_settlement_evm_insufficient_balance";
    const payloadsSince = (from: number) => seller.payloads.slice(from).map((payload) => [payload.type, payload.voucher.maxClaimableAmount]);

    it("sends a refused voucher once when no earlier answer was lost", async function () {
      const agent = agentTabs();
      const before = seller.payloads.length;
      seller.answerWith(async () => ({ refuse: INSUFFICIENT_BALANCE }));
      const refused = await refusalOf(agent.pay());
      expect(refused).to.include({ code: "TAB_PAYMENT_REFUSED" });
      expect((refused as Error).message).to.contain(INSUFFICIENT_BALANCE);
      expect(seller.payloads.length - before).to.equal(1);
      expect((await agent.kept()).tab.unanswered).to.equal(undefined);
    });

    it("answers a seller failing with a 5xx and no x402 reason as an outage: retryable, the payment still unanswered", async function () {
      const agent = agentTabs();
      const before = seller.payloads.length;
      seller.answerWith(async (sent) => (sent === before + 1 ? "failed" : "paid"));
      expect(await refusalOf(agent.pay())).to.include({ code: "TAB_SELLER_UNAVAILABLE" });
      expect((await agent.kept()).tab.unanswered).to.deep.equal({ maxClaimableAmount: PRICE.toString() });
      expect((await agent.pay()).status).to.equal(200);
    });

    it("answers an outage of the seller's facilitator as retryable, the payment still unanswered, and pays it when the chain is back", async function () {
      const agent = agentTabs();
      const before = seller.payloads.length;
      seller.answerWith(async (sent) => (sent === before + 1 ? { refuse: "invalid_batch_settlement_evm_rpc_read_failed" } : "paid"));
      expect(await refusalOf(agent.pay())).to.include({ code: "TAB_SELLER_UNAVAILABLE" });
      expect((await agent.kept()).tab.unanswered).to.deep.equal({ maxClaimableAmount: PRICE.toString() });
      expect((await agent.pay()).status).to.equal(200);
      expect(payloadsSince(before)).to.deep.equal([
        ["voucher", PRICE.toString()],
        ["voucher", PRICE.toString()],
      ]);
      expect((await agent.kept()).channel).to.deep.include({ chargedCumulativeAmount: PRICE.toString() });
    });
  });

  it("opens no tab on a seller whose withdraw delay is above the agent's cap: NO_USABLE_ENTRY, nothing proven or sent", async function () {
    const store = new MemoryTabStore();
    let opened = 0;
    const tabs = new PrivateTabs({
      store,
      options: { channelDirectory: mkdtempSync(path.join(tmpdir(), "tab-terms-")), depositAtomic: DEPOSIT },
      open: async () => {
        opened += 1;
        throw new Error("no tab is opened");
      },
    });
    const before = seller.payloads.length;
    const thirtyDays = { ...accepted, extra: { ...accepted.extra, withdrawDelay: 30 * 86_400 } };
    const refused = await refusalOf(tabs.pay({ url: seller.url, init: {}, accepted: thirtyDays, resource: { url: seller.url, description: "", mimeType: "" } }));
    expect(refused).to.include({ code: "NO_USABLE_ENTRY" });
    expect((refused as Error).message).to.contain("withdrawDelay of 2592000 s is above the agent's maxWithdrawDelaySeconds (86400 s)");
    expect([opened, seller.payloads.length - before, store.tabs.size]).to.deep.equal([0, 0, 0]);
  });
});
