import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import net, { type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { parseEther, Wallet } from "ethers";
import { NoteVault, ShieldedPaymentRefusedError, X402Agent, type AgentEvent } from "../../sdk/agent/index.js";
import { FacilitatorClient } from "../../sdk/client/facilitator-client.js";
import { changeNoteOf, type Note } from "../../sdk/index.js";
import { caip2NetworkOf } from "../../sdk/x402/networks.js";
import { MemoryServedPayments } from "../../seller/index.js";
import { startSeller, WEATHER_REPORT, type Seller } from "../../x402-peers/seller.js";
import { spawnService, type ServiceProcess } from "../helpers/service-process.js";
import { startSendTripwire } from "../helpers/send-tripwire.js";
import { relayerEnv, startRelayerProcess, type RelayerProcess } from "../relayer/helpers/relayer-process.js";
import { treasury } from "../relayer/helpers/relayer-harness.js";
import { rejectionOf } from "../sdk/agent/helpers/rejection.js";
import { AGENT_PASSPHRASE, startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";
import { startRecordingProxy } from "./helpers/recording-proxy.js";

/** A port free now, for a process that must come back on the same one after it was killed. */
async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** One party of a payment as its own process (x402-peers/crash-peer.ts), ready. */
async function startPeer(config: Record<string, unknown>): Promise<ServiceProcess & { ready: Record<string, unknown> }> {
  const peer = spawnService("x402-peers/crash-peer.ts", [], { CRASH_PEER: JSON.stringify(config) });
  const ready = await Promise.race([
    peer.logLine("ready", 120_000),
    peer.exited.then((outcome) => {
      throw new Error(`the ${String(config.role)} exited (${outcome}) before it was ready:\n${peer.lines.join("\n")}`);
    }),
  ]);
  return { ...peer, ready };
}

/**
 * A crash per party, by SIGKILL between a send and its receipt, then the agent's own retry, unmodified: one payment
 * (the seller up by exactly the price, the note spent once), one answer, the agent's vault right.
 */
describe("paid means served across crashes: each party killed between a send and its receipt", function () {
  let world: PaymentWorld;
  const processes: ServiceProcess[] = [];

  before(async function () {
    world = await startPaymentWorld();
  });
  afterEach(async function () {
    for (const process of processes.splice(0)) await process.kill();
  });
  after(async function () {
    await world?.close();
  });

  /** A funded key of its own (a process's relaying or settling key must not share nonces with the world's). */
  async function fundedKey() {
    const key = Wallet.createRandom();
    await (await world.chain.depositors.erin.sendTransaction({ to: key.address, value: parseEther("1") })).wait();
    return key;
  }

  /** The agent's vault after its payment: the deposit spent, its change note alone free. */
  async function expectPaidOnce(vault: NoteVault, deposit: { note: Note }, payTo: string, events: AgentEvent[]) {
    expect(await world.usdcBalance(payTo), "the seller is paid exactly the price, once").to.equal(world.price);
    const proofs = events.filter((event): event is Extract<AgentEvent, { step: "proved-payment" }> => event.step === "proved-payment");
    expect(proofs, "one proof: the same payment was presented again").to.have.length(1);
    const withdrawn = BigInt(proofs[0]!.amount) + BigInt(proofs[0]!.fee);
    expect(await world.unspentNotes(vault), "the vault holds the change note alone").to.deep.equal([changeNoteOf(deposit.note, withdrawn)]);
  }

  const shieldedSeller = (facilitatorUrl: string, payTo: string): Promise<Seller> =>
    startSeller({
      facilitatorUrl,
      x402Version: 2,
      network: caip2NetworkOf(world.chainId),
      asset: world.asset,
      amountAtomic: world.price.toString(),
      payTo,
      offers: "shielded-proof",
      served: new MemoryServedPayments(),
    });

  it("the seller's server, killed once its facilitator settled and before it answered: restarted on its record, it serves the agent's retry once", async function () {
    const payTo = Wallet.createRandom().address;
    const port = await freePort();
    let seller: ServiceProcess | undefined;
    // Between the seller and the relayer's seller routes: the seller dies as the settle's answer comes back.
    const proxy = await startRecordingProxy(world.relayer.url, (route, answer) => {
      if (route.endsWith("/settle") && answer.success === true && seller !== undefined) {
        void seller.kill();
        seller = undefined;
      }
      return answer;
    });
    const config = {
      role: "seller",
      facilitatorUrl: `${proxy.url}/api/seller`,
      chainId: world.chainId,
      asset: world.asset,
      priceAtomic: world.price.toString(),
      payTo,
      port,
      servedFile: path.join(mkdtempSync(path.join(tmpdir(), "served-")), "served.sqlite"),
      referenceSecret: `0x${randomBytes(32).toString("hex")}`,
      serveLeaseSeconds: 10,
    };
    try {
      const first = await startPeer(config);
      seller = first;
      processes.push(first);
      const { agent, vault, deposit, events } = await world.newAgent(world.chain.depositors.alice, 1_000_000n);
      const paying = agent.fetch(first.ready.url as string);
      expect(await first.exited).to.equal("SIGKILL");
      const restarted = await startPeer(config);
      processes.push(restarted);
      const response = await paying;
      expect(response.status).to.equal(200);
      expect(await response.json()).to.deep.equal(WEATHER_REPORT);
      expect(proxy.requests.filter((request) => request.url.endsWith("/settle") && request.status === 200), "the second settle found it paid").to.have.length(2);
      await expectPaidOnce(vault, deposit, payTo, events);
    } finally {
      await proxy.close();
    }
  });

  it("the seller's @x402/core facilitator with the plug-in, killed once the chain took its relay: restarted, it settles the agent's retry as paid, once", async function () {
    const [exactKey, relayKey] = [await fundedKey(), await fundedKey()];
    const port = await freePort();
    let facilitator: ServiceProcess | undefined;
    const tripwire = await startSendTripwire(world.chain.rpc.url, () => {
      void facilitator?.kill();
      facilitator = undefined;
    });
    const config = {
      role: "facilitator",
      rpcUrl: tripwire.url,
      chainId: world.chainId,
      addressBook: world.chain.addressBookFile,
      exactKey: exactKey.privateKey,
      relayKey: relayKey.privateKey,
      feeRecipient: Wallet.createRandom().address,
      minimumFee: "5000",
      usdcPerEth: "2000000",
      port,
    };
    const first = await startPeer(config);
    facilitator = first;
    processes.push(first);
    const payTo = Wallet.createRandom().address;
    const seller = await shieldedSeller(first.ready.url as string, payTo);
    try {
      const { agent, vault, deposit, events } = await world.newAgent(world.chain.depositors.bob, 1_000_000n);
      const paying = agent.fetch(seller.resourceUrl);
      expect(await first.exited).to.equal("SIGKILL");
      expect(tripwire.sent, "its relay left before it died").to.have.length(1);
      const restarted = await startPeer(config);
      processes.push(restarted);
      const response = await paying;
      expect(response.status).to.equal(200);
      expect(tripwire.sent, "the restarted facilitator recognized the payment: no second relay").to.have.length(1);
      await expectPaidOnce(vault, deposit, payTo, events);
    } finally {
      await seller.close();
      await tripwire.close();
    }
  });

  it("the relayer behind its seller routes, killed once the chain took its relay: restarted on its database, it settles the agent's retry as paid, once", async function () {
    const port = await freePort();
    let relayer: RelayerProcess | undefined;
    const tripwire = await startSendTripwire(world.chain.rpc.url, () => {
      void relayer?.kill();
      relayer = undefined;
    });
    const key = await fundedKey();
    const env = relayerEnv(world.chain, world.indexer, {
      RELAYER_RPC_URL: tripwire.url,
      RELAYER_PRIVATE_KEY: key.privateKey,
      RELAYER_PORT: String(port),
      RELAYER_HOST: "127.0.0.1",
      RELAYER_DB_PATH: path.join(mkdtempSync(path.join(tmpdir(), "relayer-")), "relayer.sqlite"),
    });
    const first = await startRelayerProcess(env);
    relayer = first;
    processes.push(first);
    const payTo = Wallet.createRandom().address;
    const seller = await shieldedSeller(`${first.url}/api/seller`, payTo);
    try {
      const { agent, vault, deposit, events } = await world.newAgent(world.chain.depositors.carol, 1_000_000n);
      const paying = agent.fetch(seller.resourceUrl);
      expect(await first.exited).to.equal("SIGKILL");
      const restarted = await startRelayerProcess(env);
      processes.push(restarted);
      const response = await paying;
      expect(response.status).to.equal(200);
      expect(tripwire.sent, "no second relay").to.have.length(1);
      expect(await world.accruedFees(treasury.address)).to.be.greaterThan(0n);
      await expectPaidOnce(vault, deposit, payTo, events);
    } finally {
      await seller.close();
      await tripwire.close();
    }
  });

  it("the agent, killed once its payment reached the seller: restarted on its vault, it presents the same payment again, spends no other note, and the seller serves it no second time", async function () {
    const payTo = Wallet.createRandom().address;
    let agentProcess: ServiceProcess | undefined;
    const proxy = await startRecordingProxy(world.relayer.url, (route, answer) => {
      if (route.endsWith("/verify") && agentProcess !== undefined) {
        void agentProcess.kill();
        agentProcess = undefined;
      }
      return answer;
    });
    const seller = await shieldedSeller(`${proxy.url}/api/seller`, payTo);
    try {
      const { vault: setupVault, vaultFile, deposit } = await world.newAgent(world.chain.depositors.dave, 1_000_000n);
      await setupVault.close();
      const first = await startPeer({ role: "agent", url: seller.resourceUrl, relayerUrl: world.relayer.url, chainId: world.chainId, asset: world.asset, vaultFile, passphrase: AGENT_PASSPHRASE });
      agentProcess = first;
      processes.push(first);
      expect(await first.exited).to.equal("SIGKILL");
      // The seller goes on without the agent: it settles and writes its answer to a closed connection.
      for (let waited = 0; (await world.usdcBalance(payTo)) === 0n && waited < 30_000; waited += 250) await new Promise((resolve) => setTimeout(resolve, 250));
      expect(await world.usdcBalance(payTo)).to.equal(world.price);
      await world.syncIndexer();

      const vault = await NoteVault.open(vaultFile, AGENT_PASSPHRASE);
      const events: AgentEvent[] = [];
      const agent = new X402Agent({
        facilitator: new FacilitatorClient(world.relayer.url),
        notes: vault,
        network: { chainId: world.chainId, asset: world.asset },
        acceptNotPrivate: true,
        onEvent: (event) => events.push(event),
      });
      const refused = (await rejectionOf(agent.fetch(seller.resourceUrl))) as ShieldedPaymentRefusedError;
      expect(refused).to.be.instanceOf(ShieldedPaymentRefusedError);
      expect(refused.seller.reason, "the seller answered it once, to the agent that died").to.equal("invalid_shielded_payment_already_used");
      expect(refused.retryable).to.equal(false);
      expect(events.filter((event) => event.step === "proved-payment"), "no new proof, no other note").to.have.length(0);
      expect(await world.usdcBalance(payTo)).to.equal(world.price);
      // The refusal is read against the chain: the payment's change note landed, so the note is spent and its change saved.
      const [spentNote, change] = await vault.list();
      expect(spentNote).to.deep.equal({ note: deposit.note, spent: true });
      expect(change!.spent).to.equal(false);
      expect(change!.note.label).to.equal(deposit.note.label);
      await vault.close();
    } finally {
      await seller.close();
      await proxy.close();
    }
  });
});
