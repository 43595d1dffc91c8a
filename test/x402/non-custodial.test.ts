import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "chai";
import { hexlify, randomBytes, Wallet } from "ethers";
import { grossForNet } from "../../relayer/pricing/pricing.js";
import { proveLocally, recoverNotes, X402Agent, type AgentEvent } from "../../sdk/agent/index.js";
import { FacilitatorClient, type QuoteAnswer, type SettleX402ProofAnswer } from "../../sdk/client/facilitator-client.js";
import {
  buildWithdrawInput,
  changeNoteOf,
  createLeanIMT,
  unpackLeaves,
  deriveChangeSecrets,
  deriveRefundSecrets,
  encodePoolAuthorization,
  encodeRelayData,
  merkleWitness,
  nullifierHashOf,
  precommitmentOf,
  withdrawalContext,
  type Note,
  type PoolAuthorization,
  type WithdrawProof,
} from "../../sdk/index.js";
import { builtNativeProver, sharedProver } from "../../sdk/prover/index.js";
import { readPaymentRequired, selectExactRequirement } from "../../sdk/x402/payment-required.js";
import type { ExactRequirement, ResourceInfo } from "../../sdk/x402/index.js";
import { WEATHER_REPORT } from "../../x402-peers/seller.js";
import { buildRelayerConfig, relayerKey, startRelayer } from "../relayer/helpers/relayer-harness.js";
import { rejectionOf } from "../sdk/agent/helpers/rejection.js";
import { deposit as depositInPool } from "../indexer/helpers/pool-actions.js";
import { startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";
import { startRecordingProxy, type RecordedRequest, type RecordingProxy } from "./helpers/recording-proxy.js";

const TAKE_BPS = 500n;
const SETTLE_X402_PROOF = "/api/facilitator/settle-x402-proof";

/** Every key and every string or number value of a JSON body, at any depth. */
function jsonParts(body: string): { keys: string[]; values: string[] } {
  const parts = { keys: [] as string[], values: [] as string[] };
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (typeof value === "object" && value !== null) {
      for (const [key, child] of Object.entries(value)) {
        parts.keys.push(key);
        walk(child);
      }
    } else if (typeof value === "string" || typeof value === "number") parts.values.push(String(value));
  };
  if (body !== "") walk(JSON.parse(body));
  return parts;
}

/**
 * Fails when any request the relayer received names a note's nullifier, secret, value or label (or the deposit's
 * commitment, which would link the payment to the deposit), by value or by field name.
 */
function expectNothingOfTheNotes(requests: RecordedRequest[], notes: Note[], deposit: Note): void {
  for (const request of requests) {
    const where = `${request.method} ${request.url}`;
    const { keys, values } = jsonParts(request.body);
    expect(keys, where).to.not.include.members(["serviceDeposit", "nullifier", "secret", "value", "label", "commitment", "nextNullifier", "nextSecret"]);
    const text = `${request.url}\n${request.body}`;
    for (const note of notes) {
      for (const [field, secret] of [["nullifier", note.nullifier], ["secret", note.secret], ["label", note.label]] as const) {
        expect(text, `${where} holds a note's ${field}`).to.not.contain(secret.toString());
      }
      expect(values, `${where} holds a note's value`).to.not.include(note.value.toString());
    }
    expect(text, `${where} holds the deposit's commitment`).to.not.contain(deposit.commitment.toString());
  }
}

describe("non-custodial settle: the agent proves, the relayer only relays (docs/api.md 4.10)", function () {
  let world: PaymentWorld;
  let proxy: RecordingProxy;
  let entrypoint: string;
  let seller: { accepted: ExactRequirement; resource?: ResourceInfo };
  const gross = () => grossForNet(world.price, TAKE_BPS);

  before(async function () {
    world = await startPaymentWorld();
    proxy = await startRecordingProxy(world.relayer.url);
    entrypoint = await world.chain.facilitator.entrypoint.getAddress();
    const required = await readPaymentRequired(await fetch(world.sellers.v2.resourceUrl));
    seller = {
      accepted: selectExactRequirement(required!, { chainId: world.chainId, asset: world.asset })!,
      resource: required!.x402Version === 2 ? required!.resource : undefined,
    };
  });
  after(async function () {
    await proxy?.close();
    await world?.close();
  });
  beforeEach(function () {
    proxy.requests.length = 0;
  });

  /** A settle-x402-proof body for `note`, proven here against a quote of `facilitator`, as the SDK's agent builds it. */
  async function provenRequest(note: Note, facilitator = new FacilitatorClient(world.relayer.url)) {
    const { body, change } = await proveLocally({
      facilitator,
      prover: sharedProver(),
      note,
      expected: { route: "settle-x402", withdrawnValue: gross(), feeBps: TAKE_BPS, processooor: entrypoint, accepted: seller.accepted },
      fields: { accepts: seller.accepted, resource: seller.resource, acceptNotPrivate: true },
    });
    return { body, change };
  }

  const withdrawalsOf = async (note: Note) => {
    const pool = world.chain.facilitator.privacyPool;
    const withdrawn = await pool.queryFilter(pool.filters.Withdrawn());
    return withdrawn.filter((event) => event.args.spentNullifierHash === nullifierHashOf(note.nullifier));
  };

  it("pays a v2 and a v1 reference seller with proofs it makes itself; no body the relayer received names a note's secrets, value or label", async function () {
    // A tree of one leaf has that leaf for root: other deposits first, as in any pool with an anonymity set.
    for (const tag of [501, 502]) await depositInPool(world.chain, world.chain.depositors.erin, tag);
    const value = 2_137_451n;
    const treesPath = path.join(mkdtempSync(path.join(tmpdir(), "agent-trees-")), "notes.vault.trees");
    const { agent, vault, deposit, events, seed } = await world.newAgent(world.chain.depositors.alice, value, {
      custody: "non-custodial",
      facilitator: new FacilitatorClient(proxy.url),
      treesPath,
    });
    const pool = await world.poolBalance();

    for (const [paid, payTo] of [[world.sellers.v2, world.payTo.v2], [world.sellers.v1, world.payTo.v1]] as const) {
      const before = await world.usdcBalance(payTo);
      const response = await agent.fetch(paid.resourceUrl);
      expect(response.status).to.equal(200);
      expect(await response.json()).to.deep.equal(WEATHER_REPORT);
      expect(await world.usdcBalance(payTo)).to.equal(before + world.price);
      await world.syncIndexer();
    }

    const payment = ["payment-required", "probe", "proved", "settled", "paid"];
    expect(events.map((event) => event.step)).to.deep.equal([...payment, ...payment]);
    const answers = events.flatMap((event) => (event.step === "settled" ? [event.answer as SettleX402ProofAnswer] : []));
    expect(answers.map((answer) => answer.x402Version)).to.deep.equal([2, 1]);
    for (const answer of answers) {
      expect(answer).to.include({ amount: world.price.toString(), gross: gross().toString(), replayed: false });
      expect(answer).to.not.have.any.keys("nextDeposit", "remainingValue", "proofTimeMs");
      expect(answer.privacy.custody.mode).to.equal("non-custodial");
    }
    expect(await world.poolBalance()).to.equal(pool - 2n * gross());

    // The change notes are the agent's own: it computed them, the relayer answered only their commitments.
    const first = changeNoteOf(deposit.note, gross());
    const [second] = await world.unspentNotes(vault);
    expect(second).to.deep.equal(changeNoteOf(first, gross()));
    expect(answers.map((answer) => answer.changeCommitment)).to.deep.equal([first.commitment.toString(), second!.commitment.toString()]);

    // Each payment asks its own anonymity set, then the trees (the note not yet named), then one quote.
    const leg = (trees: string) => [
      `GET /api/facilitator/anonymity-set?withdrawnValue=${gross()}`,
      `GET /api/facilitator/trees${trees}`,
      "POST /api/facilitator/quote-x402",
      "POST /api/facilitator/settle-x402-proof",
    ];
    // The second payment asks only for the leaves after those of the first: its deposit, the first change note, and the others'.
    const sizes = world.indexer.indexer.queries.trees();
    expect(proxy.requests.map((request) => `${request.method} ${request.url}`)).to.deep.equal([
      "GET /api/facilitator/supported",
      ...leg("?stateFrom=0&aspFrom=0"),
      ...leg(`?stateFrom=${sizes.state.size - 2}&aspFrom=${sizes.asp.size}`),
    ]);
    const engine = builtNativeProver() ? "native" : "wasm";
    expect(events.flatMap((event) => (event.step === "proved" ? [event.engine] : []))).to.deep.equal([engine, engine]);
    expectNothingOfTheNotes(proxy.requests, [deposit.note, first, second!], deposit.note);

    // Spendable afterwards by the agent alone, restarted: it reads its trees back from its file and asks only for the
    // leaves added since; its seed finds what is left.
    const restarted = new X402Agent({
      facilitator: new FacilitatorClient(proxy.url),
      notes: vault,
      network: { chainId: world.chainId, asset: world.asset },
      acceptNotPrivate: true,
      custody: "non-custodial",
      treesPath,
    });
    expect((await restarted.fetch(world.sellers.v2.resourceUrl)).status).to.equal(200);
    // Its file holds the tree of the second payment's quote: up to the first change note.
    expect(proxy.requests.filter((request) => request.url.startsWith("/api/facilitator/trees")).at(-1)!.url).to.equal(
      `/api/facilitator/trees?stateFrom=${sizes.state.size - 1}&aspFrom=${sizes.asp.size}`,
    );
    await world.syncIndexer();
    const recovered = await recoverNotes({ provider: world.provider, addressBook: world.chain.facilitator.addressBook, seed });
    expect(recovered.unspent).to.deep.equal(await world.unspentNotes(vault));
    expect(recovered.unspent[0]?.value).to.equal(value - 3n * gross());
    expectNothingOfTheNotes(proxy.requests, [deposit.note, first, second!], deposit.note);
  });

  it("waits out a trees answer the relayer holds back (429 with Retry-After) and proves with the trees it then gets", async function () {
    // A relayer admitting one request a second: a request just before takes it, the trees request is refused, and
    // the quote right after the trees answer is refused in turn.
    const limited = await startRelayer(buildRelayerConfig(world.chain, world.indexer, { pricingMode: "paid", rateLimitGlobalPerSecond: "1" }));
    const limitedProxy = await startRecordingProxy(limited.url);
    try {
      const { deposit } = await world.newAgent(world.chain.depositors.carol, 1_000_000n);
      await sleep(1_100); // the bucket full again: the harness's readiness check took its token
      const facilitator = new FacilitatorClient(limitedProxy.url);
      await facilitator.supported();
      const { body } = await provenRequest(deposit.note, facilitator);
      const statusesOf = (prefix: string) => limitedProxy.requests.filter((request) => request.url.startsWith(prefix)).map((request) => request.status);
      expect(statusesOf("/api/facilitator/trees")).to.deep.equal([429, 200]);
      expect(statusesOf("/api/facilitator/quote-x402")).to.deep.equal([429, 200]);
      expect(body.proof.publicSignals).to.have.length.greaterThan(0);
      // The proof is one the relayer takes: it pays the seller.
      const answer = await world.relayer.post("/api/facilitator/settle-x402-proof", body);
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    } finally {
      await limitedProxy.close();
      await limited.stop();
    }
  });

  it("settles an invoice with the agent's proof (quote, settle-proof): payTo gets the amount less the take", async function () {
    const { agent, vault, deposit } = await world.newAgent(world.chain.depositors.dave, 1_000_000n, {
      custody: "non-custodial",
      facilitator: new FacilitatorClient(proxy.url),
    });
    const payTo = Wallet.createRandom().address;
    await agent.fetchWithSettlement(world.sellers.v2.resourceUrl, {}, { payTo, maxAmountRequired: "100000" });

    expect(await world.usdcBalance(payTo)).to.equal(95_000n);
    expect((await world.unspentNotes(vault)).map((note) => note.value)).to.deep.equal([900_000n]);
    expect(proxy.requests.map((request) => `${request.method} ${request.url}`)).to.deep.equal([
      "GET /api/facilitator/supported",
      "GET /api/facilitator/anonymity-set?withdrawnValue=100000",
      "GET /api/facilitator/trees?stateFrom=0&aspFrom=0",
      "POST /api/facilitator/quote",
      "POST /api/facilitator/settle-proof",
    ]);
    expectNothingOfTheNotes(proxy.requests, [deposit.note, changeNoteOf(deposit.note, 100_000n)], deposit.note);
  });

  it("answers the identical proof-carrying request, twice and then 10 times at once, with one withdrawal and the same payment", async function () {
    const { deposit } = await world.newAgent(world.chain.depositors.bob, 1_000_000n);
    const note = deposit.note;
    const { body } = await provenRequest(note);
    const pool = await world.poolBalance();

    const first = await world.relayer.post(SETTLE_X402_PROOF, body);
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    expect(first.body.replayed).to.equal(false);
    const again = await world.relayer.post(SETTLE_X402_PROOF, body);
    expect(again.body).to.deep.equal({ ...first.body, replayed: true, privacy: again.body.privacy });
    const concurrent = await Promise.all(Array.from({ length: 10 }, () => world.relayer.post(SETTLE_X402_PROOF, body)));
    for (const answer of concurrent) expect(answer.body, JSON.stringify(answer.body)).to.deep.include({ replayed: true, xPayment: first.body.xPayment });

    // One take accrued; the price waits in the pool for the seller, under the one authorization the quote fixed.
    expect(await world.poolBalance()).to.equal(pool - (gross() - world.price));
    expect(await withdrawalsOf(note)).to.have.length(1);
    // The relayer knows of the change note only its commitment; the payment carries the nonce the quote fixed.
    const lease = await world.relayer.relayer.store.getLease(nullifierHashOf(note.nullifier));
    expect(lease).to.deep.include({ state: "settled", remainingValue: null, changeCommitment: BigInt(first.body.changeCommitment as string) });
    expect(lease?.payment?.nonce).to.equal((body.quote as QuoteAnswer).paymentNonce);

    // Another retry key is another request: the retry capability is the agent's, not a reader of the relay's calldata.
    const other = await world.relayer.post(SETTLE_X402_PROOF, { ...body, retryKey: hexlify(randomBytes(32)) });
    expect(other.status).to.equal(409);
    expect(other.body).to.deep.include({ settled: false, code: "ALREADY_SPENT" });

    const paid = await fetch(world.sellers.v2.resourceUrl, { headers: { "PAYMENT-SIGNATURE": first.body.xPayment as string } });
    expect(paid.status).to.equal(200);
    expect(await world.poolBalance()).to.equal(pool - gross());
  });

  it("refuses, before any lease or gas, a proof for another payer or fee, a proof that does not verify and an altered quote", async function () {
    const { deposit } = await world.newAgent(world.chain.depositors.carol, 1_000_000n);
    const note = deposit.note;
    const facilitator = new FacilitatorClient(world.relayer.url);
    const fields = { accepts: seller.accepted, resource: seller.resource, acceptNotPrivate: true };
    const { quote } = await facilitator.quoteX402({ ...fields, nullifierHash: nullifierHashOf(note.nullifier).toString() });
    const trees = await facilitator.trees();
    const pathOf = (packed: string, leaf: bigint) => {
      const tree = createLeanIMT(unpackLeaves(packed));
      return merkleWitness(tree, tree.indexOf(leaf));
    };
    /** A real proof of the quoted note, amount and roots, bound to `relay` instead of the quote's terms. */
    const proveFor = async (relay: PoolAuthorization): Promise<WithdrawProof> => {
      const { proof, publicSignals } = await sharedProver().prove(
        buildWithdrawInput({
          note,
          withdrawnValue: BigInt(quote.withdrawnValue),
          changeSecrets: deriveChangeSecrets(note),
          stateWitness: pathOf(trees.state.leaves, note.commitment),
          aspWitness: pathOf(trees.asp.leaves, note.label),
          context: withdrawalContext({ processooor: quote.processooor, data: encodePoolAuthorization(relay) }, BigInt(quote.scope)),
          relayFeeBPS: relay.relayFeeBPS,
          refundPrecommitment: precommitmentOf(deriveRefundSecrets(note)),
        }),
      );
      return { proof, publicSignals };
    };
    const quoted: PoolAuthorization = {
      payTo: quote.recipient,
      value: BigInt(quote.withdrawnValue) - BigInt(quote.fee),
      validAfter: BigInt(quote.paymentValidAfter!),
      validBefore: BigInt(quote.paymentValidBefore!),
      nonce: quote.paymentNonce!,
      feeRecipient: quote.feeRecipient,
      relayFeeBPS: BigInt(quote.feeBps),
    };
    const attacker = Wallet.createRandom().address;
    const settle = (proof: WithdrawProof, withQuote: QuoteAnswer = quote) =>
      world.relayer.post(SETTLE_X402_PROOF, { ...fields, quote: withQuote, proof, retryKey: hexlify(randomBytes(32)) });
    const relayerNonce = await world.provider.getTransactionCount(relayerKey.address);
    const pool = await world.poolBalance();

    const otherPayer = await proveFor({ ...quoted, payTo: attacker });
    const otherPayment = await proveFor({ ...quoted, validBefore: quoted.validBefore + 3600n });
    for (const proof of [otherPayer, otherPayment, await proveFor({ ...quoted, relayFeeBPS: 0n }), await proveFor({ ...quoted, feeRecipient: attacker })]) {
      const { status, body } = await settle(proof);
      expect(status, JSON.stringify(body)).to.equal(422);
      expect(body).to.deep.include({ settled: false, code: "INVALID_PROOF" });
      expect(body.error).to.match(/^The proof's context is/);
    }
    const genuine = await proveFor(quoted);
    const unverifiable = await settle({ ...genuine, proof: { ...genuine.proof, pi_a: genuine.proof.pi_c } });
    expect(unverifiable.status).to.equal(422);
    expect(unverifiable.body.error).to.match(/does not verify against the withdrawal circuit's verification key/);
    // The attacker's payee written into the quote, with the proof made for it: the quote is no longer the relayer's.
    const attackerContext = withdrawalContext({ processooor: quote.processooor, data: encodePoolAuthorization({ ...quoted, payTo: attacker }) }, BigInt(quote.scope));
    const altered = await settle(otherPayer, { ...quote, recipient: attacker, context: attackerContext.toString() });
    expect(altered.status).to.equal(400);
    expect(altered.body).to.deep.include({ settled: false, code: "INVALID_REQUEST" });

    expect(await world.provider.getTransactionCount(relayerKey.address)).to.equal(relayerNonce);
    expect(await world.poolBalance()).to.equal(pool);
    expect(await world.relayer.relayer.store.getLease(nullifierHashOf(note.nullifier))).to.equal(undefined);
    expect(await withdrawalsOf(note)).to.have.length(0);

    const paid = await settle(genuine);
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(await withdrawalsOf(note)).to.have.length(1);
  });

  it("refuses a copy of an agent's proof presented for another payTo, with the agent's quote or a quote of its own, before anything moves", async function () {
    const { deposit } = await world.newAgent(world.chain.depositors.erin, 1_000_000n);
    const { body } = await provenRequest(deposit.note);
    const nullifierHash = nullifierHashOf(deposit.note.nullifier);
    // Whoever holds a copy of the proof (the relay's calldata, a log) names its own payTo for the same price.
    const thief = Wallet.createRandom().address;
    const stolenTerms = { accepts: { ...seller.accepted, payTo: thief }, resource: seller.resource, acceptNotPrivate: true };
    const { quote: thiefQuote } = await new FacilitatorClient(world.relayer.url).quoteX402({ ...stolenTerms, nullifierHash: nullifierHash.toString() });
    expect(thiefQuote.recipient).to.equal(thief);
    const relayerNonce = await world.provider.getTransactionCount(relayerKey.address);
    const pool = await world.poolBalance();

    const withOwnQuote = await world.relayer.post(SETTLE_X402_PROOF, { ...body, ...stolenTerms, quote: thiefQuote });
    expect(withOwnQuote.status, JSON.stringify(withOwnQuote.body)).to.equal(422);
    expect(withOwnQuote.body).to.deep.include({ settled: false, code: "INVALID_PROOF" });
    expect(withOwnQuote.body.error).to.match(/^The proof's context is/);
    const withAgentsQuote = await world.relayer.post(SETTLE_X402_PROOF, { ...body, ...stolenTerms });
    expect(withAgentsQuote.status, JSON.stringify(withAgentsQuote.body)).to.equal(400);
    expect(withAgentsQuote.body.error).to.match(/^quote\.recipient is/);

    expect(await world.provider.getTransactionCount(relayerKey.address)).to.equal(relayerNonce);
    expect(await world.poolBalance()).to.equal(pool);
    expect(await world.relayer.relayer.store.getLease(nullifierHash)).to.equal(undefined);
    expect(await world.usdcBalance(thief)).to.equal(0n);
    const paid = await world.relayer.post(SETTLE_X402_PROOF, body);
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
  });

  it("refuses a quote past its expiry before anything is reserved, and still replays a spend settled under one", async function () {
    // Long enough to fetch the trees and prove on a busy 2-core machine.
    const ttlSeconds = 10;
    const shortLived = await startRelayer(buildRelayerConfig(world.chain, world.indexer, { pricingMode: "paid", quoteTtlSeconds: String(ttlSeconds), proverWorkers: "1" }));
    try {
      const facilitator = new FacilitatorClient(shortLived.url);
      const { deposit } = await world.newAgent(world.chain.depositors.erin, 1_000_000n);
      const note = deposit.note;
      const pastExpiry = async (quote: QuoteAnswer) => sleep(Math.max(0, quote.expiresAt * 1000 + 1_100 - Date.now()));

      const stale = await provenRequest(note, facilitator);
      expect(stale.body.quote.expiresAt).to.be.at.most(Math.ceil(Date.now() / 1000) + ttlSeconds);
      await pastExpiry(stale.body.quote);
      const refused = await shortLived.post(SETTLE_X402_PROOF, stale.body);
      expect(refused.status).to.equal(410);
      expect(refused.body).to.deep.include({ settled: false, code: "QUOTE_EXPIRED" });
      expect(refused.body.error).to.contain("Ask for a new quote");
      expect(await shortLived.relayer.store.getLease(nullifierHashOf(note.nullifier))).to.equal(undefined);

      const fresh = await provenRequest(note, facilitator);
      const settled = await shortLived.post(SETTLE_X402_PROOF, fresh.body);
      expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
      await pastExpiry(fresh.body.quote);
      const retry = await shortLived.post(SETTLE_X402_PROOF, fresh.body);
      expect(retry.body).to.deep.include({ replayed: true, xPayment: settled.body.xPayment, fundingTxHash: settled.body.fundingTxHash });
      expect(await withdrawalsOf(note)).to.have.length(1);
    } finally {
      await shortLived.stop();
    }
  });

  it("refuses a quote that pays someone else than the invoice, proving and sending nothing", async function () {
    const thief = Wallet.createRandom().address;
    // A facilitator that quotes its own address as the recipient, context and all consistent with it.
    const lying = await startRecordingProxy(world.relayer.url, (path, answer) => {
      if (path !== "/api/facilitator/quote") return answer;
      const quote = answer.quote as QuoteAnswer;
      const data = encodeRelayData({ recipient: thief, feeRecipient: quote.feeRecipient, relayFeeBPS: BigInt(quote.feeBps) });
      return { quote: { ...quote, recipient: thief, context: withdrawalContext({ processooor: quote.processooor, data }, BigInt(quote.scope)).toString() } };
    });
    try {
      const { agent, vault, deposit, events } = await world.newAgent(world.chain.depositors.alice, 1_000_000n, { facilitator: new FacilitatorClient(lying.url) });
      const refused = await rejectionOf(agent.fetchWithSettlement(world.sellers.v2.resourceUrl, {}, { payTo: world.payTo.v2, maxAmountRequired: "100000" }));
      expect(refused).to.have.property("code", "QUOTE_REFUSED");
      expect(refused.message).to.contain(`it pays ${thief}`);
      expect(events.map((event: AgentEvent) => event.step)).to.deep.equal([]);
      expect(lying.requests.map((request) => request.url)).to.not.include("/api/facilitator/settle-proof");
      expect(await world.unspentNotes(vault)).to.deep.equal([deposit.note]);
    } finally {
      await lying.close();
    }
  });

  it("sends the note to a facilitator that offers no non-custodial settle only when allowed to (custody auto)", async function () {
    const older = await startRecordingProxy(world.relayer.url, (path, answer) => {
      if (path !== "/api/facilitator/supported") return answer;
      const { nonCustodial: _, ...supported } = answer;
      return supported;
    });
    try {
      const strict = await world.newAgent(world.chain.depositors.bob, 1_000_000n, { custody: "non-custodial", facilitator: new FacilitatorClient(older.url) });
      expect(await rejectionOf(strict.agent.fetch(world.sellers.v2.resourceUrl))).to.have.property("code", "NON_CUSTODIAL_UNAVAILABLE");
      expect(older.requests.map((request) => `${request.method} ${request.url}`)).to.deep.equal(["GET /api/facilitator/supported"]);
      expect(await world.unspentNotes(strict.vault)).to.deep.equal([strict.deposit.note]);

      const auto = await world.newAgent(world.chain.depositors.bob, 1_000_000n, { facilitator: new FacilitatorClient(older.url) });
      expect((await auto.agent.fetch(world.sellers.v2.resourceUrl)).status).to.equal(200);
      expect(auto.events.map((event) => event.step)).to.deep.equal(["payment-required", "probe", "settled", "paid"]);
      expect(older.requests.map((request) => request.url)).to.include("/api/facilitator/settle-x402");
      expect((await world.unspentNotes(auto.vault)).map((note) => note.value)).to.deep.equal([1_000_000n - gross()]);
    } finally {
      await older.close();
    }
  });
});
