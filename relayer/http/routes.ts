import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import Router from "@koa/router";
import type { Context } from "koa";
import type { z } from "zod";
import type { AgentRegistry } from "../agents/registry.js";
import type { AccessFeeGate } from "../buyer/access-fee-gate.js";
import type { AccessFeeRelay } from "../buyer/access-fee-relay.js";
import type { Facilitator } from "../buyer/facilitator.js";
import { AGENT_KEY_HEADER, AgentListResponseSchema, AgentLookupQuerySchema, AgentRegisterRequestSchema } from "../schemas/agent.js";
import { AccessFeeProofRequestSchema, AuthorizeRequestSchema, QuoteAccessFeeRequestSchema } from "../schemas/authorize.js";
import { TreeLeavesQuerySchema, type TreeLeavesQuery } from "../../indexer/api.js";
import { QuoteRequestSchema, SettleProofRequestSchema, SettleRequestSchema, WithdrawRequestSchema, X402PayRequestSchema } from "../schemas/settle.js";
import { QuoteX402RequestSchema, SettleX402ProofRequestSchema, SettleX402RequestSchema } from "../schemas/settle-x402.js";
import { OpenTabRequestSchema, QuoteTabRequestSchema } from "../schemas/tab.js";
import { AnonymitySetQuerySchema } from "../schemas/privacy.js";
import { isPrivate, MINIMUM_FOR_PRIVACY } from "../pricing/privacy.js";
import { VerifyRequestSchema } from "../schemas/verify.js";
import type { TabOpener, TabTerms } from "../x402/open-tab.js";
import type { X402Settler, X402Terms } from "../x402/settle-x402.js";
import type { TreesCache } from "../trees/trees-cache.js";
import type { SupportedResponse } from "../pricing/supported.js";
import { ROUTES } from "./paths.js";
import { parseWith } from "./parse.js";
import type { BulkAnswerPacer } from "./trees-pacing.js";
import {
  agentPublicToWire,
  agentToWire,
  openedTabToWire,
  provenSpendToWire,
  quoteToWire,
  spendToWire,
  tabQuoteToWire,
  x402ProvenSettlementToWire,
  x402SettlementToWire,
} from "./wire.js";

export interface RouteDeps {
  facilitator: Facilitator;
  x402: X402Settler;
  tabs: TabOpener;
  accessFee: AccessFeeGate;
  accessFeeRelay: AccessFeeRelay;
  agents: AgentRegistry;
  supported: () => Promise<SupportedResponse>;
  /** Both trees with the leaves after those the caller has, as JSON bytes in parts (docs/api.md 4.10, relayer/trees/trees-cache.ts). */
  trees: Pick<TreesCache, "sizeNow" | "answer">;
  /** Holds back whole-tree answers beyond the relayer's bandwidth budget for them. */
  treesPacer: BulkAnswerPacer;
  openapi: () => unknown;
}

/** Trees answers up to this size are sent as one buffer, larger ones as the cache's slices (relayer/trees/trees-cache.ts). */
const JOIN_TREES_BODY_BYTES = 64 * 1024;

const body = (ctx: Context) => (ctx.request as { body?: unknown }).body;

/** The agent key the caller sent, if any. */
const agentKeyOf = (ctx: Context) => ctx.get(AGENT_KEY_HEADER) || undefined;

/** Thin routes: parse with the endpoint's schema, call the facilitator, serialize. */
export function facilitatorRouter({ facilitator, x402, tabs, accessFee, accessFeeRelay, agents, supported, trees, treesPacer, openapi }: RouteDeps): Router {
  const router = new Router();

  router.get(ROUTES.supported, async (ctx) => {
    ctx.body = await supported();
  });

  router.get(ROUTES.openapi, (ctx) => {
    ctx.body = openapi();
  });

  router.post(ROUTES.verify, async (ctx) => {
    const { paymentDetails, serviceDeposit } = parseWith(VerifyRequestSchema, body(ctx));
    const result = await facilitator.verify({
      note: serviceDeposit,
      payTo: paymentDetails.payTo,
      amount: paymentDetails.maxAmountRequired,
      network: paymentDetails.networkId,
    });
    ctx.body = result;
  });

  router.post(ROUTES.settle, async (ctx) => {
    const request = parseWith(SettleRequestSchema, body(ctx));
    if (request.agentId !== undefined) await agents.authenticate(request.agentId, agentKeyOf(ctx));
    const result = await facilitator.settle({ ...invoiceOf(request), note: request.serviceDeposit });
    ctx.body = { settled: true, ...spendToWire(result) };
  });

  router.post(ROUTES.authorize, async (ctx) => {
    const { network, accessTokenTxHash, nullifierHash } = parseWith(AuthorizeRequestSchema, body(ctx));
    await accessFee.authorize(network, accessTokenTxHash, nullifierHash);
    ctx.body = { authorized: true };
  });

  router.post(ROUTES.withdraw, async (ctx) => {
    const { recipient, amountAtomic, ...note } = parseWith(WithdrawRequestSchema, body(ctx));
    const result = await facilitator.withdraw(note, recipient, amountAtomic);
    ctx.body = { withdrawn: true, recipient, ...spendToWire(result) };
  });

  router.post(ROUTES.x402Pay, async (ctx) => {
    const { provider, amountAtomic, ...note } = parseWith(X402PayRequestSchema, body(ctx));
    const result = await facilitator.settle({ note, payTo: provider, amount: amountAtomic });
    ctx.body = { paid: true, provider, ...spendToWire(result) };
  });

  router.post(ROUTES.agentRegister, async (ctx) => {
    const registration = parseWith(AgentRegisterRequestSchema, body(ctx));
    const { agent, agentKey } = await agents.register({
      name: registration.name,
      publicKey: registration.publicKey,
      ownerWallet: registration.ownerWallet,
      perTransactionLimit: registration.perTransactionLimitAtomic,
      dailyLimit: registration.dailyLimitAtomic,
      providerWhitelist: registration.providerWhitelist,
      categories: registration.categories,
    });
    ctx.status = 201;
    ctx.body = { ...agentToWire(agent), agentKey };
  });

  router.get(ROUTES.agentRegister, async (ctx) => {
    const { id } = parseWith(AgentLookupQuerySchema, ctx.query);
    const agentKey = agentKeyOf(ctx);
    if (id === undefined) {
      ctx.body = AgentListResponseSchema.parse({ agents: (await agents.list()).map(agentPublicToWire), prototype: true });
    } else {
      ctx.body = agentKey === undefined ? agentPublicToWire(await agents.publicLookup(id)) : agentToWire(await agents.lookup(id, agentKey));
    }
  });

  router.post(ROUTES.settleX402, async (ctx) => {
    const request = parseWith(SettleX402RequestSchema, body(ctx));
    if (request.agentId !== undefined) await agents.authenticate(request.agentId, agentKeyOf(ctx));
    const result = await x402.settle({
      ...x402TermsOf(request),
      note: request.serviceDeposit,
      changeSecrets: request.nextNullifier === undefined ? undefined : { nullifier: request.nextNullifier, secret: request.nextSecret! },
    });
    ctx.body = { settled: true, ...x402SettlementToWire(result) };
  });

  router.get(ROUTES.trees, async (ctx) => {
    const query = parseWith(TreeLeavesQuerySchema.strict(), ctx.query);
    // Charged before anything is fetched: a request over the budget costs no more than its refusal.
    const admitted = treesPacer.admit(trees.sizeNow(query));
    const { parts, byteLength } = await trees.answer(query);
    const heldMs = treesPacer.settle(admitted, byteLength);
    if (heldMs > 0) await sleep(heldMs); // a warm agent's answer is never held, not even for a timer's turn
    ctx.type = "json";
    // A large answer is sent as its parts: joining them would copy every leaf again, on each request. A small one
    // is joined: one write costs less than a stream's.
    ctx.body = byteLength <= JOIN_TREES_BODY_BYTES ? Buffer.concat(parts, byteLength) : Readable.from(parts, { objectMode: false });
    ctx.length = byteLength;
  });

  router.get(ROUTES.anonymitySet, async (ctx) => {
    const { withdrawnValue } = parseWith(AnonymitySetQuerySchema, ctx.query);
    const { anonymitySet, aspRoot } = await facilitator.anonymityOf(withdrawnValue);
    ctx.body = {
      withdrawnValue: withdrawnValue.toString(),
      private: isPrivate(anonymitySet),
      anonymitySet,
      minimumForPrivacy: MINIMUM_FOR_PRIVACY,
      aspRoot: aspRoot?.toString() ?? null,
    };
  });

  router.post(ROUTES.quote, async (ctx) => {
    const request = parseWith(QuoteRequestSchema, body(ctx));
    if (request.agentId !== undefined) await agents.authenticate(request.agentId, agentKeyOf(ctx));
    const quote = await facilitator.quote({ ...invoiceOf(request), nullifierHash: request.nullifierHash });
    ctx.body = { quote: quoteToWire(quote) };
  });

  router.post(ROUTES.settleProof, async (ctx) => {
    const request = parseWith(SettleProofRequestSchema, body(ctx));
    if (request.agentId !== undefined) await agents.authenticate(request.agentId, agentKeyOf(ctx));
    const result = await facilitator.settleProven({ ...invoiceOf(request), quote: request.quote, proof: request.proof });
    ctx.body = { settled: true, ...provenSpendToWire(result) };
  });

  router.post(ROUTES.quoteX402, async (ctx) => {
    const request = parseWith(QuoteX402RequestSchema, body(ctx));
    if (request.agentId !== undefined) await agents.authenticate(request.agentId, agentKeyOf(ctx));
    const quote = await x402.quote({ ...x402TermsOf(request), nullifierHash: request.nullifierHash });
    ctx.body = { quote: quoteToWire(quote) };
  });

  router.post(ROUTES.settleX402Proof, async (ctx) => {
    const request = parseWith(SettleX402ProofRequestSchema, body(ctx));
    if (request.agentId !== undefined) await agents.authenticate(request.agentId, agentKeyOf(ctx));
    const result = await x402.settleProven({ ...x402TermsOf(request), quote: request.quote, proof: request.proof, retryKey: request.retryKey });
    ctx.body = { settled: true, ...x402ProvenSettlementToWire(result) };
  });

  router.post(ROUTES.quoteTab, async (ctx) => {
    const request = parseWith(QuoteTabRequestSchema, body(ctx));
    if (request.agentId !== undefined) await agents.authenticate(request.agentId, agentKeyOf(ctx));
    ctx.body = tabQuoteToWire(await tabs.quote({ ...tabTermsOf(request), nullifierHash: request.nullifierHash }));
  });

  router.post(ROUTES.openTab, async (ctx) => {
    const request = parseWith(OpenTabRequestSchema, body(ctx));
    if (request.agentId !== undefined) await agents.authenticate(request.agentId, agentKeyOf(ctx));
    const opened = await tabs.open({ ...tabTermsOf(request), quote: request.quote, proof: request.proof, retryKey: request.retryKey });
    ctx.body = { opened: true, ...openedTabToWire(opened) };
  });

  router.post(ROUTES.quoteAccessFee, async (ctx) => {
    const quote = await accessFeeRelay.quote(parseWith(QuoteAccessFeeRequestSchema, body(ctx)));
    ctx.body = { quote: quoteToWire(quote) };
  });

  router.post(ROUTES.accessFeeProof, async (ctx) => {
    const result = await accessFeeRelay.payProven(parseWith(AccessFeeProofRequestSchema, body(ctx)));
    ctx.body = { settled: true, authorized: true, authorizedNullifierHash: result.authorizedNullifierHash.toString(), ...provenSpendToWire(result) };
  });

  return router;
}

/** The invoice of a settle-style body. */
function invoiceOf(request: { paymentDetails: { payTo: string; maxAmountRequired: bigint; networkId?: string }; agentId?: string; category?: string }) {
  return {
    payTo: request.paymentDetails.payTo,
    amount: request.paymentDetails.maxAmountRequired,
    network: request.paymentDetails.networkId,
    agentId: request.agentId,
    category: request.category,
  };
}

/** The seller's terms of a settle-x402-style body. */
function x402TermsOf(request: Omit<z.output<typeof QuoteX402RequestSchema>, "nullifierHash">): X402Terms {
  return { accepted: request.accepts, resource: request.resource, acceptNotPrivate: request.acceptNotPrivate, agentId: request.agentId, category: request.category };
}

/** A tab's terms of a quote-tab or open-tab body. */
function tabTermsOf(request: Omit<z.output<typeof QuoteTabRequestSchema>, "nullifierHash">): TabTerms {
  const { accepts, payerAuthorizer, salt, depositAmount, reclaimableAfter, acceptNotPrivate, agentId, category } = request;
  return { accepted: accepts, payerAuthorizer, salt, deposit: depositAmount, reclaimableAfter: BigInt(reclaimableAfter), acceptNotPrivate, agentId, category };
}
