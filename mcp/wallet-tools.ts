import { AsyncLocalStorage } from "node:async_hooks";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { Wallet, type Provider } from "ethers";
import { z } from "zod";
import {
  DepositError,
  depositNotes,
  equalValues,
  fetchSameOrigin,
  recoverNotes,
  X402AgentError,
  type AgentEvent,
  type NoteVault,
  type PoolAddressBook,
  type X402Agent,
  type X402Settlement,
} from "../sdk/agent/index.js";
import { FacilitatorError, type FacilitatorClient, type OpenTabAnswer } from "../sdk/client/facilitator-client.js";
import { amountOf, readPaymentRequired } from "../sdk/x402/index.js";

/** What the tools work with. The seed and the keys stay in here: no answer and no log line carries them. */
export interface WalletToolsDeps {
  agent: X402Agent;
  /** Every AgentEvent of `agent` (its onEvent), so that a fetch can report its own payment. */
  agentEvents: { run<T>(collect: (event: AgentEvent) => void, body: () => Promise<T>): Promise<T> };
  facilitator: FacilitatorClient;
  vault: NoteVault;
  provider: Provider;
  addressBook: PoolAddressBook;
  seed: string;
  maxPaymentAtomic: bigint;
  budgetAtomic: bigint;
  confirmPayments: boolean;
  /** Whether payments go ahead while the pool is below the privacy minimum. */
  acceptNotPrivate: boolean;
  /** Pays deposits; undefined when the owner configured none. */
  depositor?: Wallet;
}

/** The most notes one x402_deposit makes: each is a transaction of its own. */
const MAX_NOTES_PER_DEPOSIT = 16;

/** The most of a response body a fetch answers with; the rest is cut, and the answer says so. */
const MAX_BODY_CHARS = 100_000;

/** Routes an agent's events to the tool call that caused them, even while several calls run. */
export function agentEventRouter() {
  const current = new AsyncLocalStorage<(event: AgentEvent) => void>();
  return {
    onEvent: (event: AgentEvent) => current.getStore()?.(event),
    run: <T>(collect: (event: AgentEvent) => void, body: () => Promise<T>) => current.run(collect, body),
  };
}

const answer = (value: unknown): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(value, (_key, field: unknown) => (typeof field === "bigint" ? field.toString() : field), 2) }],
});

/** A refusal or failure as the host sees it: a tool error that says what happened and what to do. */
const refusal = (text: string): CallToolResult => ({ content: [{ type: "text", text }], isError: true });

/** The typed errors of the SDK and the facilitator carry their code and a message that says what to do; no secret. */
function refusalOf(error: unknown): CallToolResult {
  if (error instanceof X402AgentError || error instanceof FacilitatorError || error instanceof DepositError) return refusal(`${error.code}: ${error.message}`);
  return refusal(error instanceof Error ? error.message : String(error));
}

/**
 * The network's reason a fetch got no answer at all (ECONNREFUSED, ENOTFOUND, a reset): fetch itself says only
 * "fetch failed" and keeps the reason in its cause. Undefined for any other error.
 */
function networkFailureOf(error: unknown): string | undefined {
  if (!(error instanceof TypeError) || error.message !== "fetch failed") return undefined;
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  const code = typeof cause?.code === "string" ? cause.code : undefined;
  const message = typeof cause?.message === "string" && cause.message !== "" ? cause.message : undefined;
  if (message === undefined) return code ?? "no answer";
  return code === undefined || message.includes(code) ? message : `${code}: ${message}`;
}

/**
 * A fetch of `url` that got no answer, as FETCH_FAILED naming the request and the cause. Before the agent took a
 * step of a payment (no event), it was the first request to `url` and nothing was paid; after, a request of the
 * payment (the seller's probe or paid retry, or the facilitator) failed, and the answer says what is known.
 */
function fetchFailure(method: string, url: string, error: unknown, steps: readonly AgentEvent["step"][]): CallToolResult | undefined {
  const cause = networkFailureOf(error);
  if (cause === undefined) return undefined;
  if (steps.length === 0) {
    return refusal(`FETCH_FAILED: ${method} ${url} got no answer (${cause}). Nothing was paid. Check the URL and that its server is up, then call again.`);
  }
  const paid = steps.includes("settled")
    ? "The payment left the pool: an authorization the seller never uses comes back to this wallet's notes once it expires (x402_recover finds the refund)."
    : "No settlement was answered; x402_balance and x402_recover show whether a note was spent.";
  return refusal(`FETCH_FAILED: a request while paying ${method} ${url} got no answer (${cause}): the seller or the facilitator is unreachable. ${paid}`);
}

/** Runs a tool; a failure becomes its refusal, as `explain` words it when it knows the error. */
async function guarded(body: () => Promise<CallToolResult>, explain: (error: unknown) => CallToolResult | undefined = () => undefined): Promise<CallToolResult> {
  try {
    return await body();
  } catch (error) {
    return explain(error) ?? refusalOf(error);
  }
}

const atomicAmount = z.string().regex(/^[1-9][0-9]*$/, "a positive amount of atomic USDC (1 USDC = 1000000)");

/** Registers the wallet's tools: a paying fetch, the balance, a deposit, recovery from the seed, the privacy status. */
export function registerWalletTools(server: McpServer, deps: WalletToolsDeps): void {
  const { agent, vault } = deps;
  /** Deposits one at a time: two at once could pick the same deposit index of the seed. */
  let deposits: Promise<unknown> = Promise.resolve();

  const balance = async () => {
    const entries = await vault.list();
    const unspent = entries.filter((entry) => !entry.spent).map((entry) => entry.note.value);
    return {
      balanceAtomic: unspent.reduce((sum, value) => sum + value, 0n),
      unspentNotes: unspent.length,
      // Held by payments under way, or by a spend whose outcome x402_recover will read from the chain.
      reservedNotes: entries.filter((entry) => !entry.spent && entry.reserved !== undefined).length,
      largestNoteAtomic: unspent.reduce((largest, value) => (value > largest ? value : largest), 0n),
      spentNotes: entries.length - unspent.length,
      maxPaymentAtomic: deps.maxPaymentAtomic,
      budget: { budgetAtomic: deps.budgetAtomic, usedAtomic: agent.committedAtomic, leftAtomic: deps.budgetAtomic - agent.committedAtomic },
    };
  };

  server.registerTool(
    "x402_fetch",
    {
      title: "Fetch a URL, paying an x402 402 privately",
      description:
        "Fetches a URL. When it answers 402 with x402 payment terms, pays it out of the privacy pool (the seller sees a " +
        "pool as the payer, never this wallet) within the per-payment cap and the budget, and returns the paid response." +
        " With confirmations on, the first call only answers the price; call again with confirmPriceAtomic to pay it." +
        " A redirect to another origin is refused: only the URL's own origin is ever paid.",
      inputSchema: {
        url: z.url({ protocol: /^https?$/ }),
        method: z.enum(["GET", "POST", "PUT", "PATCH", "DELETE"]).default("GET"),
        headers: z.record(z.string(), z.string()).optional(),
        body: z.string().optional(),
        confirmPriceAtomic: atomicAmount.optional().describe("The price the user confirmed; nothing above it is paid."),
      },
    },
    ({ url, method, headers, body, confirmPriceAtomic }) => {
      const steps: AgentEvent["step"][] = [];
      return guarded(async () => {
        const init: RequestInit = { method, ...(headers !== undefined && { headers }), ...(body !== undefined && { body }) };
        if (deps.confirmPayments && confirmPriceAtomic === undefined) {
          // As the paid fetch: within the URL's origin only, so the price confirmed is that origin's seller's.
          const preview = await fetchSameOrigin(url, init);
          if (preview.status !== 402) return answer(await responseSummary(preview));
          const required = await readPaymentRequired(preview);
          if (required === undefined) throw new X402AgentError("NOT_X402", `${url} answered 402 without x402 payment details; nothing was paid.`);
          const tab = agent.tabEntryOf(required);
          const shielded = tab === undefined ? await agent.shieldedEntryOf(required) : undefined;
          const price = tab?.amount ?? shielded?.amount ?? amountOf(agent.usableEntry(required, url));
          const onTop =
            tab !== undefined
              ? "paid on a private tab; the first request to this seller opens one, its whole deposit and the facilitator's take leaving a note"
              : shielded === undefined
                ? "the facilitator's take comes on top"
                : `a relay fee of ${shielded.extra.fee} atomic USDC comes on top`;
          return refusal(
            `CONFIRMATION_REQUIRED: ${url} asks ${price} atomic USDC (${onTop}). Nothing was paid. ` +
              `Ask the user to confirm this price, then call x402_fetch again with confirmPriceAtomic "${price}".`,
          );
        }
        const payments: Record<string, unknown>[] = [];
        const collect = (event: AgentEvent) => {
          steps.push(event.step);
          if (event.step === "settled" && "xPayment" in event.answer) payments.push(paymentSummary(event.answer));
          if (event.step === "settled" && "opened" in event.answer) payments.push(tabSummary(event.answer));
          if (event.step === "proved-payment") payments.push(shieldedPaymentSummary(event));
        };
        const cap = confirmPriceAtomic === undefined ? {} : { maxPaymentAtomic: BigInt(confirmPriceAtomic) };
        const response = await deps.agentEvents.run(collect, () => agent.fetch(url, init, cap));
        return answer({ ...(await responseSummary(response)), ...(payments[0] !== undefined && { payment: payments[0] }) });
      }, (error) => fetchFailure(method, url, error, steps));
    },
  );

  server.registerTool(
    "x402_balance",
    {
      title: "Balance of the wallet's notes",
      description: "The USDC the wallet's unspent notes hold (atomic units), how many notes, and what is left of the budget.",
    },
    () => guarded(async () => answer(await balance())),
  );

  server.registerTool(
    "x402_deposit",
    {
      title: "Deposit USDC into the privacy pool",
      description:
        "Deposits amountAtomic USDC from the owner's depositor key into the pool as notes of this wallet's seed: one note by " +
        "default, or `notes` notes of equal value (each at least 1 USDC = 1000000), so that as many payments can run at once. " +
        "Each note is a deposit of its own, public with its value and the depositor's address. Spendable once the " +
        "facilitator's compliance set (ASP) approves the deposits.",
      inputSchema: {
        amountAtomic: atomicAmount,
        notes: z.number().int().min(1).max(MAX_NOTES_PER_DEPOSIT).default(1).describe("How many notes to split the amount into."),
      },
    },
    ({ amountAtomic, notes }) =>
      guarded(async () => {
        const { depositor } = deps;
        if (depositor === undefined) {
          return refusal("NO_DEPOSITOR: this server has no depositor key. Set X402_DEPOSITOR_PRIVATE_KEY to a key holding USDC and gas, and restart it.");
        }
        const values = equalValues(BigInt(amountAtomic), notes);
        const run = deposits.then(() => depositNotes({ signer: depositor, addressBook: deps.addressBook, values, seed: deps.seed }));
        deposits = run.catch(() => {});
        const deposited = await run;
        for (const { note } of deposited) await vault.save(note);
        const [first] = deposited;
        return answer({
          deposited: true,
          valueAtomic: deposited.reduce((sum, { note }) => sum + note.value, 0n),
          depositIndex: first!.index,
          ...(deposited.length > 1 && { notes: deposited.map(({ note, index }) => ({ depositIndex: index, valueAtomic: note.value })) }),
          txHash: first!.txHash,
          spendable: "once the facilitator's ASP approves the deposit (x402_privacy_status shows the pool).",
          balance: await balance(),
        });
      }),
  );

  server.registerTool(
    "x402_recover",
    {
      title: "Recover the wallet's notes from its seed",
      description:
        "Rebuilds every note of the wallet's seed from the chain alone (deposits, change notes, refunds of payments a seller " +
        "refused) and stores the unspent ones in the vault; notes the chain shows spent are marked spent, and notes held by " +
        "a payment whose outcome was lost are settled from the chain.",
    },
    () =>
      guarded(async () => {
        const reconciled = await vault.reconcile({ provider: deps.provider, addressBook: deps.addressBook });
        const recovered = await recoverNotes({ provider: deps.provider, addressBook: deps.addressBook, seed: deps.seed });
        const before = new Map((await vault.list()).map((entry) => [entry.note.commitment, entry.spent]));
        const added = recovered.unspent.filter((note) => !before.has(note.commitment));
        for (const note of added) await vault.save(note);
        const spentOnChain = new Set(
          recovered.chains.flatMap((chain) => chain.history.flatMap((step) => (step.kind === "deposited" ? [] : [step.spentCommitment]))),
        );
        const stale = [...before].filter(([commitment, spent]) => !spent && spentOnChain.has(commitment)).map(([commitment]) => commitment);
        for (const commitment of stale) await vault.markSpent(commitment);
        return answer({
          recoveredNotes: added.length,
          markedSpent: stale.length,
          reservations: { released: reconciled.released.length, spent: reconciled.spent.length, pending: reconciled.pending.length },
          chains: recovered.chains.map((chain) => ({ depositIndex: chain.depositIndex, origin: chain.origin, status: chain.status, valueAtomic: chain.latest.value })),
          toBlock: recovered.toBlock,
          balance: await balance(),
        });
      }),
  );

  server.registerTool(
    "x402_privacy_status",
    {
      title: "Privacy status of the facilitator's pool",
      description: "The anonymity set the facilitator reports, the minimum for privacy, and whether a payment now is private.",
    },
    () =>
      guarded(async () => {
        const supported = SupportedPrivacySchema.parse(await deps.facilitator.supported());
        const { pilot, blockingReasons } = supported;
        return answer({
          private: pilot.private,
          anonymitySet: pilot.anonymitySet,
          minimumForPrivacy: pilot.minimumForPrivacy,
          payingWhenNotPrivate: deps.acceptNotPrivate,
          blockingReasons: blockingReasons.map((reason) => reason.code),
          network: supported.contracts?.network,
        });
      }),
  );
}

/** The part of the facilitator's `supported` the privacy status reads. */
const SupportedPrivacySchema = z.looseObject({
  pilot: z.looseObject({ private: z.boolean(), anonymitySet: z.number().int().nullable(), minimumForPrivacy: z.number().int() }),
  blockingReasons: z.array(z.looseObject({ code: z.string() })).default([]),
  contracts: z.looseObject({ network: z.string() }).optional(),
});

async function responseSummary(response: Response) {
  const text = await response.text();
  return {
    status: response.status,
    contentType: response.headers.get("content-type"),
    body: text.slice(0, MAX_BODY_CHARS),
    ...(text.length > MAX_BODY_CHARS && { truncated: `the body has ${text.length} characters; the first ${MAX_BODY_CHARS} are shown` }),
  };
}

/** A payment as the host may see it: public facts of the chain and the facilitator's privacy block, no secret. */
/** A payment by shielded proof: the seller's facilitator relayed it; the seller's PAYMENT-RESPONSE names the transaction. */
function shieldedPaymentSummary(event: Extract<AgentEvent, { step: "proved-payment" }>) {
  return {
    method: "shielded-proof",
    amountAtomic: event.amount,
    relayFeeAtomic: event.fee,
    feeRecipient: event.feeRecipient,
    private: event.private,
    anonymitySet: event.anonymitySet,
    custody: "non-custodial",
  };
}

/** The opening of a private tab: its deposit, the relay that made it, and its channel. */
function tabSummary(tab: OpenTabAnswer) {
  return {
    method: "tab",
    depositAtomic: (BigInt(tab.gross) - BigInt(tab.fee)).toString(),
    grossAtomic: tab.gross,
    payer: tab.payer,
    channelId: tab.channelId,
    fundingTxHash: tab.fundingTxHash,
    private: tab.privacy.private,
    anonymitySet: tab.privacy.anonymitySet,
    custody: tab.privacy.custody.mode,
  };
}

function paymentSummary(settlement: X402Settlement) {
  return {
    method: "eip3009",
    amountAtomic: settlement.amount,
    grossAtomic: settlement.gross,
    x402Version: settlement.x402Version,
    payer: settlement.payer,
    fundingTxHash: settlement.fundingTxHash,
    private: settlement.privacy.private,
    anonymitySet: settlement.privacy.anonymitySet,
    custody: settlement.privacy.custody.mode,
  };
}
