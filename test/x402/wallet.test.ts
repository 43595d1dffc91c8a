import { copyFileSync } from "node:fs";
import { expect } from "chai";
import { grossForNet } from "../../relayer/pricing/pricing.js";
import { NoteVault, recoverNotes, X402Agent, type AgentEvent, type X402AgentOptions } from "../../sdk/agent/index.js";
import { FacilitatorClient, FacilitatorError, type SettleX402ProofAnswer } from "../../sdk/client/facilitator-client.js";
import { changeNoteOf, nullifierHashOf, type Note } from "../../sdk/index.js";
import { paymentHeaders } from "../../sdk/x402/payload.js";
import { readPaymentRequired, selectExactRequirement } from "../../sdk/x402/payment-required.js";
import type { ExactRequirement, ResourceInfo } from "../../sdk/x402/index.js";
import { WEATHER_REPORT } from "../../x402-peers/seller.js";
import { rejectionOf } from "../sdk/agent/helpers/rejection.js";
import { AGENT_PASSPHRASE, startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";

const TAKE_BPS = 500n;

/** A facilitator client whose proof-carrying settle goes through `around`: what a crash at that moment leaves. */
class InterruptedFacilitator extends FacilitatorClient {
  constructor(
    url: string,
    private readonly around: (send: () => Promise<SettleX402ProofAnswer>) => Promise<SettleX402ProofAnswer>,
  ) {
    super(url);
  }

  override settleX402Proof(body: Record<string, unknown>): Promise<SettleX402ProofAnswer> {
    return this.around(() => super.settleX402Proof(body));
  }
}

/** A refusal that stops the live payment, as the crash of its process would, with nothing sent. */
const crashed = () => new FacilitatorError(400, "INVALID_REQUEST", "the agent's process is gone", {});

describe("a wallet of several notes: concurrent payments, crashes and recovery (docs/sdk.md, \"A wallet of several notes\")", function () {
  let world: PaymentWorld;
  let seller: { accepted: ExactRequirement; resource?: ResourceInfo };
  const gross = () => grossForNet(world.price, TAKE_BPS);

  before(async function () {
    world = await startPaymentWorld();
    const required = await readPaymentRequired(await fetch(world.sellers.v2.resourceUrl));
    seller = {
      accepted: selectExactRequirement(required!, { chainId: world.chainId, asset: world.asset })!,
      resource: required!.x402Version === 2 ? required!.resource : undefined,
    };
  });
  after(async function () {
    await world?.close();
  });

  /** One payment of the v2 seller's entry out of `agent`'s notes: what fetch and the @x402/core scheme both make. */
  const pay = (agent: X402Agent) => agent.payRequirement(seller.accepted, { url: world.sellers.v2.resourceUrl, resource: seller.resource });

  /** The nullifier hash each mined Withdrawn event of the pool spent, by transaction. */
  async function spentIn(txHash: string): Promise<bigint[]> {
    const pool = world.chain.facilitator.privacyPool;
    const receipt = await world.provider.getTransactionReceipt(txHash);
    expect(receipt?.status, `${txHash} was mined`).to.equal(1);
    return receipt!.logs.flatMap((log) => {
      const event = pool.interface.parseLog(log);
      return event?.name === "Withdrawn" ? [event.args.spentNullifierHash as bigint] : [];
    });
  }

  const unspentOf = async (vault: NoteVault) => (await vault.list()).filter((entry) => !entry.spent).map((entry) => entry.note);

  it("pays 8 requests at once from one wallet: each spends a different note, all settle, the change notes join the wallet, and recovery from the seed finds every note with its exact value", async function () {
    // Eight values, all different, so that every recovered value names its note.
    const values = Array.from({ length: 8 }, (_, i) => 1_000_000n + BigInt(i) * 10_007n);
    const { agent, vault, seed, deposits, events } = await world.newAgent(world.chain.depositors.alice, values);
    expect(deposits.map(({ index }) => index), "consecutive deposit indexes of the seed").to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7]);
    const before = { pool: await world.poolBalance(), seller: await world.usdcBalance(world.payTo.v2) };

    const settlements = await Promise.all(values.map(() => pay(agent)));

    // Every payment proved the spend of a note of its own, and the chain spent each of the eight deposits once.
    const proved = events.flatMap((event) => (event.step === "proved" ? [BigInt(event.quote.nullifierHash)] : []));
    const depositHashes = deposits.map(({ note }) => nullifierHashOf(note.nullifier));
    expect(proved).to.have.members(depositHashes);
    const transactions = [...new Set(settlements.map((settlement) => settlement.fundingTxHash))];
    expect((await Promise.all(transactions.map(spentIn))).flat()).to.have.members(depositHashes);
    expect(settlements.map((settlement) => settlement.privacy.custody.mode)).to.deep.equal(Array(8).fill("non-custodial"));

    // The seller takes each payment; where every atomic unit went.
    for (const settlement of settlements) {
      const response = await fetch(world.sellers.v2.resourceUrl, { headers: paymentHeaders(settlement.xPayment) });
      expect(response.status).to.equal(200);
      expect(await response.json()).to.deep.equal(WEATHER_REPORT);
    }
    expect(await world.usdcBalance(world.payTo.v2)).to.equal(before.seller + 8n * world.price);
    expect(await world.poolBalance()).to.equal(before.pool - 8n * gross());
    for (const settlement of settlements) expect(settlement.payer).to.equal(world.chain.facilitator.addressBook.privacyPool);

    // The wallet: every deposit spent, its change note (exactly the deposit less the gross) unspent and free.
    const changes = deposits.map(({ note }) => changeNoteOf(note, gross()));
    const entries = await vault.list();
    expect(entries.filter((entry) => entry.spent).map((entry) => entry.note)).to.have.deep.members(deposits.map(({ note }) => note));
    expect(entries.filter((entry) => !entry.spent)).to.have.deep.members(changes.map((note) => ({ note, spent: false })));

    const recovered = await recoverNotes({ provider: world.provider, addressBook: world.chain.facilitator.addressBook, seed });
    expect(recovered.unspent).to.have.deep.members(changes);
    expect(recovered.unspent.map((note) => note.value)).to.have.members(values.map((value) => value - gross()));
    expect(recovered.chains.map(({ depositIndex, status, history }) => ({ depositIndex, status, steps: history.map((step) => step.kind) }))).to.deep.equal(
      deposits.map(({ index }) => ({ depositIndex: index, status: "unspent", steps: ["deposited", "withdrawn"] })),
    );
  });

  it("pays more requests at once than the wallet has notes: the others wait for a change note, and each note is spent once at a time", async function () {
    const { agent, vault, deposits } = await world.newAgent(world.chain.depositors.bob, [1_000_000n, 1_000_000n]);
    await world.whileIndexerFollows(async () => {
      const settlements = await Promise.all([1, 2, 3, 4].map(() => pay(agent)));
      const spent = (await Promise.all(settlements.map((settlement) => spentIn(settlement.fundingTxHash)))).flat();
      expect(new Set(spent).size, "four spends, four nullifier hashes").to.equal(4);
    });
    const unspent = await unspentOf(vault);
    expect(unspent.map((note) => note.value)).to.have.members([1_000_000n - 2n * gross(), 1_000_000n - 2n * gross()]);
    expect(unspent.map((note) => note.label)).to.have.members(deposits.map(({ note }) => note.label));
  });

  describe("a crash between the choice of a note and its settle", function () {
    /**
     * An agent over the vault at `file` (a copy: what a crashed process left on disk), reopened as a restarted
     * process opens it.
     */
    async function restarted(file: string, options: Partial<X402AgentOptions> = {}) {
      const vault = await NoteVault.open(file, AGENT_PASSPHRASE);
      const agent = new X402Agent({ facilitator: new FacilitatorClient(world.relayer.url), notes: vault, network: { chainId: world.chainId, asset: world.asset }, acceptNotPrivate: true, ...options });
      return { vault, agent };
    }

    it("before the settle left (the agent was proving): the note is free at once after a restart, and pays", async function () {
      let file = "";
      let copy = "";
      const onEvent = (event: AgentEvent) => {
        // The vault on disk as the proof is made: the note is chosen, nothing that can spend it has left.
        if (event.step === "proved") copyFileSync(file, (copy = `${file}.proving`));
      };
      const facilitator = new InterruptedFacilitator(world.relayer.url, () => Promise.reject(crashed()));
      const { agent, vaultFile, deposit } = await world.newAgent(world.chain.depositors.carol, 1_000_000n, { facilitator, onEvent });
      file = vaultFile;
      await rejectionOf(pay(agent));

      const after = await restarted(copy);
      expect(await after.vault.list()).to.deep.equal([{ note: deposit.note, spent: false }]);
      const settlement = await pay(after.agent);
      expect(await spentIn(settlement.fundingTxHash)).to.deep.equal([nullifierHashOf(deposit.note.nullifier)]);
      expect(await unspentOf(after.vault)).to.deep.equal([changeNoteOf(deposit.note, gross())]);
    });

    it("after the settle was sent and settled, before the answer was recorded: reconcile marks the note spent and finds its change note, with its exact value, which pays", async function () {
      let copy = "";
      let file = "";
      const facilitator = new InterruptedFacilitator(world.relayer.url, async (send) => {
        const answer = await send();
        // The relayer has settled; the agent's process dies before it reads the answer.
        copyFileSync(file, (copy = `${file}.settled`));
        return answer;
      });
      const { vaultFile, deposit, agent } = await world.newAgent(world.chain.depositors.dave, 1_000_000n, { facilitator });
      file = vaultFile;
      await pay(agent);
      await world.syncIndexer();

      const after = await restarted(copy);
      const [entry] = await after.vault.list();
      expect(entry!.reserved?.sentAt, "the note is reserved, its spend sent").to.be.a("number");
      expect(await after.vault.reserve({ atLeast: 1n }), "it is given to no payment before reconcile").to.equal(undefined);

      const chain = { provider: world.provider, addressBook: world.chain.facilitator.addressBook };
      const change = changeNoteOf(deposit.note, gross());
      const reconciled = await after.vault.reconcile(chain);
      expect(reconciled).to.deep.equal({ released: [], pending: [], spent: [{ note: deposit.note, latest: change, status: "unspent" }] });
      expect(await after.vault.list()).to.deep.equal([
        { note: deposit.note, spent: true },
        { note: change, spent: false },
      ]);
      expect(await after.vault.reconcile(chain), "a second reconcile finds nothing left").to.deep.equal({ released: [], spent: [], pending: [] });

      const settlement = await pay(after.agent);
      expect(await spentIn(settlement.fundingTxHash)).to.deep.equal([nullifierHashOf(change.nullifier)]);
      expect(await unspentOf(after.vault)).to.deep.equal([changeNoteOf(change, gross())]);
    });

    it("after the settle was sent but never arrived: the note stays reserved while its spend could still land, then reconcile frees it and it pays", async function () {
      let copy = "";
      let file = "";
      const facilitator = new InterruptedFacilitator(world.relayer.url, async () => {
        copyFileSync(file, (copy = `${file}.lost`));
        throw crashed();
      });
      const { vaultFile, deposit, agent } = await world.newAgent(world.chain.depositors.erin, 1_000_000n, { facilitator });
      file = vaultFile;
      await rejectionOf(pay(agent));

      const after = await restarted(copy);
      const chain = { provider: world.provider, addressBook: world.chain.facilitator.addressBook };
      expect(await after.vault.reconcile(chain), "unspent on chain, sent a moment ago: unsure").to.deep.equal({ released: [], spent: [], pending: [deposit.note] });
      expect(await after.vault.reserve({ atLeast: 1n })).to.equal(undefined);
      expect(await after.vault.reconcile({ ...chain, settleWindowMs: 0 })).to.deep.equal({ released: [deposit.note], spent: [], pending: [] });

      const settlement = await pay(after.agent);
      expect(await spentIn(settlement.fundingTxHash)).to.deep.equal([nullifierHashOf(deposit.note.nullifier)]);
    });
  });

  it("frees the note when the facilitator answers every attempt 503 (its store unavailable): nothing was spent, FACILITATOR_UNAVAILABLE, not uncertain", async function () {
    let attempts = 0;
    const { agent, vault, deposit } = await world.newAgent(world.chain.depositors.bob, 1_000_000n, {
      settleRetries: 1,
      facilitator: new InterruptedFacilitator(world.relayer.url, async () => {
        attempts += 1;
        // As the relayer answers it: 503 with a Retry-After of 2 s.
        throw new FacilitatorError(503, "STORE_UNAVAILABLE", "the relayer's store did not answer", {}, 2);
      }),
    });
    const unavailable = await rejectionOf(pay(agent));
    expect(unavailable).to.have.property("code", "FACILITATOR_UNAVAILABLE");
    expect(attempts).to.equal(2);
    expect((await vault.list()).map(({ note, reserved }) => ({ value: note.value, reserved: reserved !== undefined }))).to.deep.equal([{ value: deposit.note.value, reserved: false }]);
    expect(await world.chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(deposit.note.nullifier))).to.equal(false);
  });

  it("keeps a note whose spend is uncertain out of later payments until reconcile reads the chain", async function () {
    const { agent, vault, deposits } = await world.newAgent(world.chain.depositors.alice, [1_000_000n, 2_000_000n], {
      settleRetries: 0,
      facilitator: new InterruptedFacilitator(world.relayer.url, async (send) => {
        const answer = await send();
        throw new FacilitatorError(202, "SETTLEMENT_UNCERTAIN", "the withdrawal was sent and is unconfirmed", { answer });
      }),
    });
    const uncertain = await rejectionOf(pay(agent));
    expect(uncertain).to.have.property("code", "SETTLEMENT_UNCERTAIN");
    const [small, large] = deposits.map(({ note }) => note) as [Note, Note];
    expect((await vault.list()).map(({ note, reserved }) => ({ value: note.value, reserved: reserved !== undefined }))).to.deep.equal([
      { value: small.value, reserved: true },
      { value: large.value, reserved: false },
    ]);
    const reconciled = await vault.reconcile({ provider: world.provider, addressBook: world.chain.facilitator.addressBook });
    expect(reconciled.spent).to.deep.equal([{ note: small, latest: changeNoteOf(small, gross()), status: "unspent" }]);
  });
});
