import { once } from "node:events";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { wrapFetchWithPayment } from "@x402/fetch";
import type { ChannelStorage } from "@x402/evm/batch-settlement/server";
import { FileChannelStorage } from "@x402/evm/batch-settlement/server/file-storage";
import { expect } from "chai";
import { grossForNet } from "../../relayer/pricing/pricing.js";
import { sweepExpiredPayers } from "../../relayer/x402/payer-sweep.js";
import { NoteVault, PrivateTabScheme, recoverNotes, registerPrivateTabScheme, tabSellerOf, X402Agent, X402AgentError, type AgentEvent } from "../../sdk/agent/index.js";
import { FacilitatorClient, FacilitatorError, type OpenTabAnswer } from "../../sdk/client/facilitator-client.js";
import type { BatchSettlementRequirement } from "../../sdk/x402/batch-settlement.js";
import { nullifierHashOf } from "../../sdk/index.js";
import { WEATHER_REPORT } from "../../x402-peers/seller.js";
import { startTcpProxy } from "../helpers/tcp-proxy.js";
import { rejectionOf } from "../sdk/agent/helpers/rejection.js";
import { AGENT_PASSPHRASE, startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";

type BatchSeller = Awaited<ReturnType<PaymentWorld["startTabSeller"]>>;

const PRICE = 1_000n;
const DEPOSIT = 100_000n;

describe("X402Agent pays a batch-settlement seller through a private tab (docs/sdk.md, \"Private tab\")", function () {
  let world: PaymentWorld;
  let seller: Awaited<ReturnType<PaymentWorld["startTabSeller"]>>;
  let takeBps: bigint;

  before(async function () {
    world = await startPaymentWorld();
    seller = await world.startTabSeller({ price: PRICE });
    takeBps = BigInt((await new FacilitatorClient(world.relayer.url).supported()).settleX402!.takeBps);
  });
  after(async function () {
    await seller?.close();
    await world?.close();
  });

  /** What an agent of this world is built with: the relayer as facilitator, its chain's USDC, proving itself. */
  const agentOptions = (notes: NoteVault) => ({
    facilitator: new FacilitatorClient(world.relayer.url),
    notes,
    network: { chainId: world.chainId, asset: world.asset },
    acceptNotPrivate: true,
    custody: "non-custodial" as const,
  });

  /** The seller's batch-settlement entry and resource, from its unpaid 402. */
  async function tabEntryOf(url: string) {
    const required = decodePaymentRequiredHeader((await fetch(url)).headers.get("PAYMENT-REQUIRED") ?? "");
    const accepted = required.accepts.find((entry) => entry.scheme === "batch-settlement") as unknown as BatchSettlementRequirement;
    return { accepted, resource: required.resource };
  }

  const relays = async () => (await world.chain.facilitator.privacyPool.queryFilter(world.chain.facilitator.privacyPool.filters.Withdrawn())).length;

  async function fetchReports(agent: X402Agent, count: number, { concurrently = false } = {}) {
    const fetchOne = async () => {
      const response = await agent.fetch(seller.resourceUrl);
      expect(response.status, await response.clone().text()).to.equal(200);
      expect(await response.json()).to.deep.equal(WEATHER_REPORT);
    };
    if (concurrently) await Promise.all(Array.from({ length: count }, fetchOne));
    else for (let i = 0; i < count; i++) await fetchOne();
  }

  it("pays many requests for one proof and one relay, the deposit counted against the budget; the seller claims what it served; a restarted agent keeps paying on the same tab", async function () {
    const channelDirectory = mkdtempSync(path.join(tmpdir(), "agent-tabs-"));
    const tabs = { channelDirectory, depositAtomic: DEPOSIT };
    const budgetAtomic = 2n * grossForNet(DEPOSIT, takeBps);
    const { agent, vault, vaultFile, events, deposit } = await world.newAgent(world.chain.depositors.alice, 1_000_000n, { custody: "non-custodial", tabs, budgetAtomic });
    const relaysBefore = await relays();
    const served = seller.served();

    await fetchReports(agent, 8);
    await fetchReports(agent, 6, { concurrently: true });
    expect(await relays()).to.equal(relaysBefore + 1);
    expect(events.filter((event) => event.step === "proved")).to.have.length(1);
    expect(agent.committedAtomic).to.equal(grossForNet(DEPOSIT, takeBps));
    expect(seller.served() - served).to.equal(14);

    // The tab's key is in the vault, encrypted: neither the vault file nor @x402/evm's channel files show it.
    const { accepted } = await tabEntryOf(seller.resourceUrl);
    const tab = (await vault.tab(tabSellerOf(accepted)))!;
    expect(tab.opened).to.include({ depositAmount: DEPOSIT.toString(), payer: await world.chain.facilitator.entrypoint.tabPayerOf(nullifierHashOf(deposit.note.nullifier)) });
    const tabKeyHex = tab.tabKey.slice(2);
    expect(readFileSync(vaultFile, "utf8")).to.not.contain(tabKeyHex);
    for (const file of readdirSync(channelDirectory, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile())) {
      expect(readFileSync(path.join(file.parentPath, file.name), "utf8")).to.not.contain(tabKeyHex);
    }

    // Restarted: the vault reopened, a new agent on the same channel storage; no second proof, deposit or relay.
    await vault.close();
    const reopened = await NoteVault.open(vaultFile, AGENT_PASSPHRASE);
    const restartedEvents: AgentEvent[] = [];
    const restarted = new X402Agent({ ...agentOptions(reopened), tabs, onEvent: (event) => restartedEvents.push(event) });
    await fetchReports(restarted, 5);
    expect(restartedEvents.filter((event) => event.step === "proved")).to.have.length(0);
    expect(await relays()).to.equal(relaysBefore + 1);
    expect(seller.served() - served).to.equal(19);
    expect(await seller.settlement.channels(tab.opened!.channelId)).to.deep.equal([DEPOSIT, 0n]);

    await seller.channels.claimAndSettle();
    expect(await world.usdcBalance(seller.payTo)).to.equal(19n * PRICE);
    await reopened.close();
  });

  it("pays through an @x402/core client with the private-tab scheme: one proof for many requests, the seller claims what it served", async function () {
    const { vault } = await world.newAgent(world.chain.depositors.carol, 1_000_000n);
    const scheme = new PrivateTabScheme({ ...agentOptions(vault), tabs: { channelDirectory: mkdtempSync(path.join(tmpdir(), "agent-tabs-")), depositAtomic: DEPOSIT } });
    const fetchPaid = wrapFetchWithPayment(fetch, registerPrivateTabScheme(new x402Client(), scheme));
    const other = await world.startTabSeller({ price: PRICE });
    try {
      const relaysBefore = await relays();
      for (let i = 0; i < 6; i++) {
        const response = await fetchPaid(other.resourceUrl);
        expect(response.status, await response.clone().text()).to.equal(200);
        expect(await response.json()).to.deep.equal(WEATHER_REPORT);
      }
      expect(await relays()).to.equal(relaysBefore + 1);
      expect(other.served()).to.equal(6);
      await other.channels.claimAndSettle();
      expect(await world.usdcBalance(other.payTo)).to.equal(6n * PRICE);
    } finally {
      await other.close();
    }
  });

  it("opens another tab when the last one cannot pay the price, each counted in full against the budget; past the budget it opens none", async function () {
    const price = 10_000n;
    const deposit = 50_000n;
    const dear = await world.startTabSeller({ price });
    try {
      const gross = grossForNet(deposit, takeBps);
      const tabs = { channelDirectory: mkdtempSync(path.join(tmpdir(), "agent-tabs-")), depositAtomic: deposit };
      const { agent, events } = await world.newAgent(world.chain.depositors.bob, 1_000_000n, { custody: "non-custodial", tabs, budgetAtomic: 2n * gross });
      const relaysBefore = await relays();
      // The second tab is paid out of the first one's change note: the indexer must have read it.
      await world.whileIndexerFollows(async () => {
        for (let i = 0; i < 10; i++) {
          const response = await agent.fetch(dear.resourceUrl);
          expect(response.status, await response.clone().text()).to.equal(200);
        }
      });
      expect(await relays()).to.equal(relaysBefore + 2);
      expect(events.filter((event) => event.step === "proved")).to.have.length(2);
      expect(agent.committedAtomic).to.equal(2n * gross);
      const refused = await agent.fetch(dear.resourceUrl).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).to.include({ code: "BUDGET_EXHAUSTED" });
      expect(await relays()).to.equal(relaysBefore + 2);
      await dear.channels.claimAndSettle();
      expect(await world.usdcBalance(dear.payTo)).to.equal(10n * price);
    } finally {
      await dear.close();
    }
  });

  it("pays on after crashes between the seller's answer and the agent's record of it, the tab's first request included: no second proof or relay, each request paid once", async function () {
    const channelDirectory = mkdtempSync(path.join(tmpdir(), "agent-tabs-"));
    const tabs = { channelDirectory, depositAtomic: DEPOSIT };
    const { agent, vault, vaultFile } = await world.newAgent(world.chain.depositors.dave, 1_000_000n, { custody: "non-custodial", tabs });
    const relaysBefore = await relays();
    const served = seller.served();
    const { accepted, resource } = await tabEntryOf(seller.resourceUrl);
    /** Sends a prepared tab payment and never records the answer: the agent stops right after the seller served it. */
    const servedAndLost = async (payer: X402Agent) => {
      const payment = await payer.prepareTabPayment(seller.resourceUrl, accepted);
      const header = encodePaymentSignatureHeader({ x402Version: 2, resource, accepted, payload: payment.payload } as unknown as PaymentPayload);
      const response = await fetch(seller.resourceUrl, { headers: { "PAYMENT-SIGNATURE": header } });
      expect(response.status, await response.clone().text()).to.equal(200);
      return payment.payload as { type: string };
    };

    // The tab's first request, a voucher on the channel the relay funded: the seller serves it; the agent keeps no record of it.
    expect(await servedAndLost(agent)).to.include({ type: "voucher" });
    await vault.close();
    const restart = async () => {
      const notes = await NoteVault.open(vaultFile, AGENT_PASSPHRASE);
      return { notes, agent: new X402Agent({ ...agentOptions(notes), tabs }) };
    };
    const first = await restart();
    // Its next request is the same voucher again; the seller's corrective 402 names its total under the tab key's
    // voucher, and the agent pays on from it.
    await fetchReports(first.agent, 3);
    // A voucher's answer lost the same way.
    expect(await servedAndLost(first.agent)).to.include({ type: "voucher" });
    await first.notes.close();
    const second = await restart();
    await fetchReports(second.agent, 2);
    // Lost once more, then an @x402/core client with the private-tab scheme on the same vault pays on: the scheme's
    // payment-response hook takes the seller's total and the client pays again (@x402/fetch's recovery).
    expect(await servedAndLost(second.agent)).to.include({ type: "voucher" });
    await second.notes.close();
    const third = await NoteVault.open(vaultFile, AGENT_PASSPHRASE);
    const scheme = new PrivateTabScheme({ ...agentOptions(third), tabs });
    const fetchPaid = wrapFetchWithPayment(fetch, registerPrivateTabScheme(new x402Client(), scheme));
    for (let i = 0; i < 2; i++) {
      const response = await fetchPaid(seller.resourceUrl);
      expect(response.status, await response.clone().text()).to.equal(200);
    }
    await third.close();

    expect(await relays()).to.equal(relaysBefore + 1);
    expect(seller.served() - served).to.equal(10);
    const kept = await NoteVault.open(vaultFile, AGENT_PASSPHRASE);
    const { opened } = (await kept.tab(tabSellerOf(accepted)))!;
    await kept.close();
    const ofTab = (channel: { channelId: string }) => channel.channelId.toLowerCase() === opened!.channelId.toLowerCase();
    await seller.channels.claimAndSettle({ selectClaimChannels: (channels) => channels.filter(ofTab) });
    expect(await seller.settlement.channels(opened!.channelId)).to.deep.equal([DEPOSIT, 10n * PRICE]);
  });

  it("pays a seller that answers each request first with a corrective 402 quoting the voucher in flight one price per request it served, claimed on chain", async function () {
    // A dishonest front of the seller: the first presentation of each total gets @x402/evm's corrective 402 naming the
    // very voucher just sent (the tab key's own, on this channel, within the deposit), to be paid for it twice; the
    // second is passed to the seller, which serves it.
    const MISMATCH = "invalid_batch_settlement_evm_cumulative_amount_mismatch";
    const seen = new Set<string>();
    const front = createServer((request, response) => {
      void (async () => {
        const header = request.headers["payment-signature"];
        const voucherOf = (value: string) => (decodePaymentSignatureHeader(value) as unknown as { accepted: { extra: object }; payload: { voucher: { channelId: string; maxClaimableAmount: string; signature: string } } });
        const paid = typeof header === "string" ? voucherOf(header) : undefined;
        const total = paid?.payload.voucher.maxClaimableAmount;
        if (paid !== undefined && total !== undefined && !seen.has(total)) {
          seen.add(total);
          const { voucher } = paid.payload;
          const channelState = { channelId: voucher.channelId, balance: DEPOSIT.toString(), totalClaimed: "0", chargedCumulativeAmount: total };
          const entry = { ...paid.accepted, extra: { ...paid.accepted.extra, channelState, voucherState: { signedMaxClaimable: total, signature: voucher.signature } } };
          const required = { x402Version: 2, error: MISMATCH, resource: { url: seller.resourceUrl, description: "", mimeType: "" }, accepts: [entry] };
          response.writeHead(402, { "PAYMENT-REQUIRED": encodePaymentRequiredHeader(required as never) }).end("{}");
          return;
        }
        const upstream = await fetch(seller.resourceUrl, { headers: typeof header === "string" ? { "PAYMENT-SIGNATURE": header } : {} });
        const headers = Object.fromEntries(["content-type", "payment-required", "payment-response"].flatMap((name) => (upstream.headers.has(name) ? [[name, upstream.headers.get(name)!]] : [])));
        response.writeHead(upstream.status, headers).end(Buffer.from(await upstream.arrayBuffer()));
      })();
    });
    front.listen(0, "127.0.0.1");
    await once(front, "listening");
    const frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}/weather`;
    try {
      const tabs = { channelDirectory: mkdtempSync(path.join(tmpdir(), "agent-tabs-")), depositAtomic: DEPOSIT };
      const { agent, vault } = await world.newAgent(world.chain.depositors.carol, 1_000_000n, { custody: "non-custodial", tabs });
      const served = seller.served();
      for (let request = 0; request < 5; request++) {
        const refused = await rejectionOf(agent.fetch(frontUrl));
        expect(refused).to.include({ code: "TAB_PAYMENT_REFUSED" });
        expect((refused as Error).message).to.contain(MISMATCH);
        const response = await agent.fetch(frontUrl);
        expect(response.status, await response.clone().text()).to.equal(200);
      }
      expect(seller.served() - served).to.equal(5);
      const { accepted } = await tabEntryOf(seller.resourceUrl);
      const { opened } = (await vault.tab(tabSellerOf(accepted)))!;
      await seller.channels.claimAndSettle({ selectClaimChannels: (channels) => channels.filter((channel) => channel.channelId.toLowerCase() === opened!.channelId.toLowerCase()) });
      expect(await seller.settlement.channels(opened!.channelId), "claimed: one price per request served").to.deep.equal([DEPOSIT, 5n * PRICE]);
      await vault.close();
    } finally {
      front.close();
    }
  });

  it("sends the same opening again after the agent stopped between open-tab's relay and its answer: one relay, one take, the same tab", async function () {
    const channelDirectory = mkdtempSync(path.join(tmpdir(), "agent-tabs-"));
    const tabs = { channelDirectory, depositAtomic: DEPOSIT };
    // The agent stops the moment open-tab relayed its proof: its vault as it was then is what a restart finds.
    let file = "";
    const copy = () => `${file}.at-crash`;
    class StopsAfterOpening extends FacilitatorClient {
      override async openTab(body: Record<string, unknown>): Promise<OpenTabAnswer> {
        await super.openTab(body);
        copyFileSync(file, copy());
        throw new FacilitatorError(400, "INVALID_REQUEST", "the agent's process is gone", {});
      }
    }
    const { agent, vaultFile, deposit } = await world.newAgent(world.chain.depositors.bob, 1_000_000n, { custody: "non-custodial", tabs, facilitator: new StopsAfterOpening(world.relayer.url) });
    file = vaultFile;
    const relaysBefore = await relays();
    await rejectionOf(agent.fetch(seller.resourceUrl));
    expect(await relays(), "the opening was relayed").to.equal(relaysBefore + 1);

    const notes = await NoteVault.open(copy(), AGENT_PASSPHRASE);
    const restarted = new X402Agent({ ...agentOptions(notes), tabs });
    await fetchReports(restarted, 3);
    expect(await relays(), "no second relay").to.equal(relaysBefore + 1);
    const { accepted } = await tabEntryOf(seller.resourceUrl);
    const { opened } = (await notes.tab(tabSellerOf(accepted)))!;
    const gross = grossForNet(DEPOSIT, takeBps);
    expect((await world.unspentNotes(notes)).map((note) => note.value), "one take: the deposit's note less one gross").to.deep.equal([deposit.note.value - gross]);
    await seller.channels.claimAndSettle({ selectClaimChannels: (channels) => channels.filter((channel) => channel.channelId.toLowerCase() === opened!.channelId.toLowerCase()) });
    expect(await seller.settlement.channels(opened!.channelId)).to.deep.equal([DEPOSIT, 3n * PRICE]);
    await notes.close();
  });

  /** Repeats `fetchOnce` while the seller answers it as an outage (TAB_SELLER_UNAVAILABLE), for up to `forMs`. */
  async function retryWhileUnavailable(fetchOnce: () => Promise<Response>, forMs: number): Promise<Response> {
    const deadline = Date.now() + forMs;
    for (;;) {
      const answer = await fetchOnce().catch((error: unknown) => error);
      if (!(answer instanceof X402AgentError && answer.code === "TAB_SELLER_UNAVAILABLE") || Date.now() > deadline) {
        if (answer instanceof Response) return answer;
        throw answer;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  it("survives the seller stopping between the tab's first voucher and its record of it: every request served after a plain retry, nothing frozen", async function () {
    // The seller's channel storage stops the seller at its record of the tab's first voucher: the record is not made,
    // and the agent's request is dropped. Its reservation of the channel outlives it until it times out.
    const PENDING_SECONDS = 20;
    let armed = true;
    let crashing: BatchSeller | undefined;
    const crashAtRecord = (directory: string): ChannelStorage => {
      const files = new FileChannelStorage({ directory });
      let writes = 0;
      return {
        get: (channelId) => files.get(channelId),
        list: () => files.list(),
        updateChannel: (channelId, update) => {
          // The reservation (after verify), then the record (after settle).
          if (armed && ++writes === 2) {
            armed = false;
            void crashing!.stop();
            return new Promise(() => {});
          }
          return files.updateChannel(channelId, update);
        },
      };
    };
    // It reads the channel from the chain again after this long: 10 s here, at most 5 minutes by @x402/evm's default.
    const CHANNEL_TTL_MS = 10_000;
    crashing = await world.startTabSeller({ price: PRICE, maxTimeoutSeconds: PENDING_SECONDS, storage: crashAtRecord, onchainStateTtlMs: CHANNEL_TTL_MS });
    try {
      const tabs = { channelDirectory: mkdtempSync(path.join(tmpdir(), "agent-tabs-")), depositAtomic: DEPOSIT };
      const { agent, vault } = await world.newAgent(world.chain.depositors.erin, 1_000_000n, { custody: "non-custodial", tabs });
      const relaysBefore = await relays();
      expect(await rejectionOf(agent.fetch(crashing.resourceUrl))).to.include({ code: "TAB_ANSWER_LOST" });
      await crashing.restart();
      const { accepted } = await tabEntryOf(crashing.resourceUrl);
      const { opened } = (await vault.tab(tabSellerOf(accepted)))!;
      expect(await crashing.settlement.channels(opened!.channelId), "the relay's deposit is on chain").to.deep.equal([DEPOSIT, 0n]);

      // A plain retry: the same voucher, taken once the seller's reservation of the lost request has timed out.
      const first = await retryWhileUnavailable(() => agent.fetch(crashing!.resourceUrl), 3 * PENDING_SECONDS * 1000 + CHANNEL_TTL_MS);
      expect(first.status, await first.clone().text()).to.equal(200);
      for (let i = 0; i < 3; i++) expect((await agent.fetch(crashing.resourceUrl)).status).to.equal(200);

      expect(await relays(), "one proof, one relay: no second tab").to.equal(relaysBefore + 1);
      expect((await vault.tab(tabSellerOf(accepted)))!.opened!.channelId).to.equal(opened!.channelId);
      expect(crashing.served()).to.equal(4);
      await crashing.channels.claimAndSettle();
      expect(await crashing.settlement.channels(opened!.channelId)).to.deep.equal([DEPOSIT, 4n * PRICE]);
      await vault.close();
    } finally {
      await crashing.close();
    }
  });

  it("answers an RPC outage of the seller's facilitator during the tab's first voucher as retryable, and pays the same tab once the chain is back: one relay", async function () {
    const rpc = await startTcpProxy(world.chain.rpc.url);
    const cut = await world.startTabSeller({ price: PRICE, rpcUrl: rpc.url });
    try {
      const tabs = { channelDirectory: mkdtempSync(path.join(tmpdir(), "agent-tabs-")), depositAtomic: DEPOSIT };
      const { agent, vault } = await world.newAgent(world.chain.depositors.erin, 1_000_000n, { custody: "non-custodial", tabs });
      const relaysBefore = await relays();
      await rpc.cut();
      const outage = await rejectionOf(agent.fetch(cut.resourceUrl));
      expect(outage, String(outage)).to.include({ code: "TAB_SELLER_UNAVAILABLE" });
      await rpc.restore();
      for (let i = 0; i < 3; i++) expect((await agent.fetch(cut.resourceUrl)).status).to.equal(200);

      const { accepted } = await tabEntryOf(cut.resourceUrl);
      const { opened } = (await vault.tab(tabSellerOf(accepted)))!;
      expect(await relays(), "one proof, one relay: no second tab").to.equal(relaysBefore + 1);
      await cut.channels.claimAndSettle();
      expect(await cut.settlement.channels(opened!.channelId)).to.deep.equal([DEPOSIT, 3n * PRICE]);
      await vault.close();
    } finally {
      await cut.close();
      await rpc.cut();
    }
  });

  it("brings what the seller did not claim back into the pool as the agent's note, with no action by the agent; the agent finds it from its seed and spends it", async function () {
    const tabs = { channelDirectory: mkdtempSync(path.join(tmpdir(), "agent-tabs-")), depositAtomic: DEPOSIT };
    const { agent, vault, seed } = await world.newAgent(world.chain.depositors.carol, 1_000_000n, { custody: "non-custodial", tabs });
    await fetchReports(agent, 5);
    const { accepted } = await tabEntryOf(seller.resourceUrl);
    const { opened } = (await vault.tab(tabSellerOf(accepted)))!;
    const ofTab = (channel: { channelId: string }) => channel.channelId.toLowerCase() === opened!.channelId.toLowerCase();
    await seller.channels.claimAndSettle({ selectClaimChannels: (channels) => channels.filter(ofTab) });
    // The seller's own cooperative refund of what it did not claim (its channel manager does it for idle channels).
    await seller.channels.refund([opened!.channelId]);
    const rest = DEPOSIT - 5n * PRICE;
    expect(await world.usdcBalance(opened!.payer)).to.equal(rest);

    // The operator's next sweep (no role, no key: Entrypoint.returnTab is anyone's): the rest enters the pool as the agent's refund note.
    const poolBefore = await world.poolBalance();
    const { records, failures } = await sweepExpiredPayers({ store: world.relayer.relayer.store, chain: world.relayer.relayer.chain });
    expect(failures).to.deep.equal([]);
    expect(records.find((record) => record.payer === opened!.payer)).to.deep.include({ outcome: "deposited", amount: rest });
    expect((await world.poolBalance()) - poolBefore).to.equal(rest);
    expect(await world.usdcBalance(opened!.payer)).to.equal(0n);

    await world.syncIndexer();
    const recovered = await recoverNotes({ provider: world.provider, addressBook: world.chain.facilitator.addressBook, seed });
    const refund = recovered.chains.find((chain) => chain.origin === "refund");
    expect(refund).to.deep.include({ status: "unspent" });
    expect(refund!.latest).to.deep.include({ value: rest, form: "refund" });

    // Spent like any note: proven by the agent (non-custodial) to pay a plain x402 seller from the pool.
    const restVault = await NoteVault.create(path.join(mkdtempSync(path.join(tmpdir(), "rest-vault-")), "notes.vault"), AGENT_PASSPHRASE);
    await restVault.save(refund!.latest);
    const restAgent = new X402Agent(agentOptions(restVault));
    const paid = await restAgent.fetch(world.sellers.v2.resourceUrl);
    expect(paid.status, await paid.clone().text()).to.equal(200);
    const [change] = await world.unspentNotes(restVault);
    expect(change).to.deep.include({ label: refund!.latest.label, form: "deposit" });
    expect(change!.value).to.be.lessThan(rest);
    await restVault.close();
  });
});
