import { z } from "zod";
import { TreeLeavesSchema } from "../../indexer/api.js";
import {
  AgentListResponseSchema,
  AgentPublicViewSchema,
  AgentRegisterRequestSchema,
  AgentRegisterResponseSchema,
  AgentViewSchema,
} from "../schemas/agent.js";
import {
  AccessFeeProofRequestSchema,
  AccessFeeProofResponseSchema,
  AuthorizeRequestSchema,
  AuthorizeResponseSchema,
  QuoteAccessFeeRequestSchema,
} from "../schemas/authorize.js";
import { ErrorBodySchema } from "../schemas/error.js";
import { AnonymitySetResponseSchema } from "../schemas/privacy.js";
import { QuoteResponseSchema } from "../schemas/quote.js";
import {
  QuoteRequestSchema,
  SettleProofRequestSchema,
  SettleProofResponseSchema,
  SettleRequestSchema,
  SettleResponseSchema,
  WithdrawRequestSchema,
  WithdrawResponseSchema,
  X402PayRequestSchema,
  X402PayResponseSchema,
} from "../schemas/settle.js";
import {
  QuoteX402RequestSchema,
  SettleX402ProofRequestSchema,
  SettleX402ProofResponseSchema,
  SettleX402RequestSchema,
  SettleX402ResponseSchema,
} from "../schemas/settle-x402.js";
import { OpenTabRequestSchema, OpenTabResponseSchema, QuoteTabRequestSchema, QuoteTabResponseSchema } from "../schemas/tab.js";
import { SellerFacilitatorRequestSchema, SellerSettleResponseSchema, SellerSupportedResponseSchema, SellerVerifyResponseSchema } from "../schemas/seller.js";
import { VerifyRequestSchema, VerifyResponseSchema } from "../schemas/verify.js";
import { ROUTES } from "./paths.js";

type Schema = z.ZodType;

const json = (schema: Schema, io: "input" | "output") => ({
  content: { "application/json": { schema: z.toJSONSchema(schema, { io, unrepresentable: "any" }) } },
});

const errorResponse = (description: string) => ({ description, ...json(ErrorBodySchema, "output") });

/** What any request can be answered with, whatever its route (docs/relayer.md "Limits"). */
const LIMITS = {
  "429": errorResponse("RATE_LIMITED, with a Retry-After header"),
  "503": errorResponse("SHUTTING_DOWN"),
};

/** The error classes each POST can answer with (docs/relayer.md has the table of codes). */
const ERRORS = {
  ...LIMITS,
  "202": errorResponse("SETTLEMENT_UNCERTAIN: the withdrawal was sent and is unconfirmed; the note may be spent. Retry the same request"),
  "400": errorResponse("INVALID_REQUEST, INVALID_PAYMENT_AMOUNT, BELOW_MINIMUM_SETTLE, BELOW_FEE_FLOOR, AUTHORIZATION_REJECTED"),
  "401": errorResponse("AGENT_UNAUTHORIZED: an agentId named without its key in X-Agent-Key"),
  "402": errorResponse("NULLIFIER_NOT_AUTHORIZED, with the `authorization` block of docs/api.md 2.6"),
  "403": errorResponse("AGENT_LIMIT_EXCEEDED"),
  "404": errorResponse("DEPOSIT_NOT_FOUND, NOT_FOUND"),
  "409": errorResponse("ALREADY_SPENT, SETTLEMENT_IN_PROGRESS"),
  "410": errorResponse("QUOTE_EXPIRED: a proof-carrying settle whose quote expired before anything was withdrawn; ask for a new quote"),
  "412": errorResponse("PRIVACY_NOT_ACKNOWLEDGED: settle-x402 below the privacy minimum without acceptNotPrivate:true"),
  "413": errorResponse("INVALID_REQUEST: the body exceeds 64 KiB"),
  "422": errorResponse("INVALID_PROOF"),
  "500": errorResponse("INTERNAL, MISSING_SERVER_CONFIG"),
  "503": errorResponse("INDEXER_COLD, INDEXER_UNAVAILABLE, CHAIN_UNAVAILABLE, STORE_UNAVAILABLE, PROVER_BUSY, NOT_READY, RELAYER_UNFUNDED, SHUTTING_DOWN"),
};

/** The agent's key, returned by its registration (docs/relayer.md "Agent records"). */
const AGENT_KEY_PARAMETER = {
  name: "X-Agent-Key",
  in: "header",
  required: false,
  description: "The agentKey of the agent named by agentId (required with agentId) or looked up by id (shows its owner and spend)",
  schema: { type: "string", pattern: "^ak_[0-9a-f]{64}$" },
};

const post = (summary: string, request: Schema, response: Schema, status = "200", parameters: object[] = []) => ({
  post: {
    summary,
    ...(parameters.length === 0 ? {} : { parameters }),
    requestBody: { required: true, ...json(request, "input") },
    responses: { [status]: { description: "success", ...json(response, "output") }, ...ERRORS },
  },
});

/** A seller-side route: x402's facilitator request in, x402's answer out; its refusals are answers, not errors. */
const sellerPost = (summary: string, response: Schema) => ({
  post: {
    summary,
    requestBody: { required: true, ...json(SellerFacilitatorRequestSchema, "input") },
    responses: {
      "200": { description: "the verification or settlement, refused or not", ...json(response, "output") },
      "400": errorResponse("INVALID_REQUEST: not an x402 v2 facilitator request"),
      "413": errorResponse("INVALID_REQUEST: the body exceeds 64 KiB"),
      ...LIMITS,
      "503": errorResponse("CHAIN_UNAVAILABLE, STORE_UNAVAILABLE, NOT_READY, RELAYER_UNFUNDED, SHUTTING_DOWN"),
    },
  },
});

/** OpenAPI 3.1 document of the facilitator API, generated from the same zod schemas the routes parse with. */
export function buildOpenApi(supportedSchema: Schema) {
  return {
    openapi: "3.1.0",
    info: { title: "x402 privacy facilitator", version: "1.0.0" },
    paths: {
      [ROUTES.supported]: {
        get: {
          summary: "Capability surface and live pricing (docs/api.md 4.1)",
          responses: { "200": { description: "success", ...json(supportedSchema, "output") }, ...LIMITS },
        },
      },
      [ROUTES.verify]: post("Check that a note covers an invoice without spending it (docs/api.md 4.2)", VerifyRequestSchema, VerifyResponseSchema),
      [ROUTES.settle]: post("Private settle of exactly maxAmountRequired to payTo (docs/api.md 4.3)", SettleRequestSchema, SettleResponseSchema, "200", [
        AGENT_KEY_PARAMETER,
      ]),
      [ROUTES.settleX402]: post(
        "Pay an x402 seller from the pool itself, by the one transfer a proof's relay authorizes; returns the X-PAYMENT value (docs/api.md 4.4)",
        SettleX402RequestSchema,
        SettleX402ResponseSchema,
        "200",
        [AGENT_KEY_PARAMETER],
      ),
      [ROUTES.quote]: post(
        "What the agent's proof of a settle must bind, for the note of nullifierHash; every check of settle (docs/api.md 4.10)",
        QuoteRequestSchema,
        QuoteResponseSchema,
        "200",
        [AGENT_KEY_PARAMETER],
      ),
      [ROUTES.settleProof]: post(
        "Settle with the agent's proof of a quote: the relayer relays it and never sees the note (docs/api.md 4.10)",
        SettleProofRequestSchema,
        SettleProofResponseSchema,
        "200",
        [AGENT_KEY_PARAMETER],
      ),
      [ROUTES.quoteX402]: post(
        "What the agent's proof of a settle-x402 must bind, for the note of nullifierHash; every check of settle-x402 (docs/api.md 4.10)",
        QuoteX402RequestSchema,
        QuoteResponseSchema,
        "200",
        [AGENT_KEY_PARAMETER],
      ),
      [ROUTES.settleX402Proof]: post(
        "settle-x402 with the agent's proof of a quote: the relayer relays it, answers the pool's payment and never sees the note (docs/api.md 4.10)",
        SettleX402ProofRequestSchema,
        SettleX402ProofResponseSchema,
        "200",
        [AGENT_KEY_PARAMETER],
      ),
      [ROUTES.quoteTab]: post(
        "Quote a private tab on a seller's batch-settlement entry: the relay that deposits into the channel whose payer is the note's TabPayer, " +
          "so the agent's proof binds the channel and the tab's lifetime; every check of settle-x402, of the deposit (docs/api.md 4.11)",
        QuoteTabRequestSchema,
        QuoteTabResponseSchema,
        "200",
        [AGENT_KEY_PARAMETER],
      ),
      [ROUTES.openTab]: post(
        "Open a private tab with the agent's proof of a quote-tab quote: the relayer relays it, and the relay spends the note and deposits into " +
          "the channel in one transaction; a retry is answered the same and moves nothing (docs/api.md 4.11)",
        OpenTabRequestSchema,
        OpenTabResponseSchema,
        "200",
        [AGENT_KEY_PARAMETER],
      ),
      [ROUTES.trees]: {
        get: {
          summary:
            "Both trees with their leaves after those the agent has (packed, 64 hex characters a leaf): the state tree and the on-chain ASP tree, from which an agent takes its own paths (docs/api.md 4.10)",
          parameters: [
            ...["stateFrom", "aspFrom"].map((name) => ({ name, in: "query", required: false, schema: { type: "integer", minimum: 0, default: 0 } })),
            ...["stateFromRoot", "aspFromRoot"].map((name) => ({
              name,
              in: "query",
              required: false,
              description: `the root the agent's first ${name.replace("Root", "")} leaves make: a tree whose first leaves make another root was rebuilt, and is answered from 0`,
              schema: { type: "string", pattern: "^(0|[1-9][0-9]*)$" },
            })),
          ],
          responses: {
            "200": { description: "success", ...json(TreeLeavesSchema, "input") },
            "400": errorResponse(
              "INVALID_REQUEST: stateFrom or aspFrom is not a non-negative integer, stateFromRoot or aspFromRoot not a field element, or an unknown query parameter",
            ),
            "422": errorResponse("INVALID_PROOF: no ASP root is on chain yet"),
            ...LIMITS,
            "503": errorResponse("INDEXER_COLD, INDEXER_UNAVAILABLE, SHUTTING_DOWN"),
          },
        },
      },
      [ROUTES.anonymitySet]: {
        get: {
          summary:
            "Whether a payment withdrawing withdrawnValue is private: its own anonymity set, the independent depositors whose screened deposits of at least that value are under the on-chain ASP root",
          parameters: [{ name: "withdrawnValue", in: "query", required: true, schema: { type: "string", pattern: "^(0|[1-9][0-9]*)$" } }],
          responses: {
            "200": { description: "success", ...json(AnonymitySetResponseSchema, "input") },
            "400": errorResponse("INVALID_REQUEST: withdrawnValue is not an atomic amount, or an unknown query parameter"),
            ...LIMITS,
          },
        },
      },
      [ROUTES.authorize]: post("Record the access-fee payment of a deposit (docs/api.md 4.5)", AuthorizeRequestSchema, AuthorizeResponseSchema),
      [ROUTES.quoteAccessFee]: post(
        "What the agent's proof of an access fee paid out of the note of nullifierHash must bind: withdrawnValue (default the required fee; " +
          "on a paid network at least the fee and its relay's gas, the 402's noteWithdrawalAtomic) to the treasury, no take, and " +
          "authorizedNullifierHash, the note the fee authorizes (the agent's change note). Answered only while the gate is on (docs/relayer.md \"Access fee\")",
        QuoteAccessFeeRequestSchema,
        QuoteResponseSchema,
      ),
      [ROUTES.accessFeeProof]: post(
        "Pay an access fee out of a note with the agent's proof of an access-fee quote: the relayer relays it through Entrypoint.relayAccessFee, " +
          "paying the gas (which the withdrawal covers on a paid network), and authorizes the note of authorizedNullifierHash; the spent note needs " +
          "no authorization (docs/relayer.md \"Access fee\")",
        AccessFeeProofRequestSchema,
        AccessFeeProofResponseSchema,
      ),
      [ROUTES.withdraw]: post("Withdraw a note, fully or partially, to a recipient (docs/api.md 4.6)", WithdrawRequestSchema, WithdrawResponseSchema),
      [ROUTES.x402Pay]: post("One-call private payment to a provider (docs/api.md 4.7)", X402PayRequestSchema, X402PayResponseSchema),
      [ROUTES.sellerSupported]: {
        get: {
          summary: "Seller side: the x402 kinds this facilitator verifies and settles: `exact`, plain (EIP-3009, Permit2) and by shielded proof, with its pool, fee recipient and least fee (docs/api.md 4.9)",
          responses: { "200": { description: "success", ...json(SellerSupportedResponseSchema, "output") }, ...LIMITS },
        },
      },
      [ROUTES.sellerVerify]: sellerPost(
        "Seller side: verify a payment without a transaction: a plain one as the x402 reference facilitator does, a shielded-proof one by its terms, window, fee against the gas now and a simulation of the relay; a refusal is isValid:false with x402's reason (docs/api.md 4.9)",
        SellerVerifyResponseSchema,
      ),
      [ROUTES.sellerSettle]: sellerPost(
        "Seller side: settle a payment: a plain one by the x402 reference scheme from the relayer's EIP-3009 key; a shielded-proof one relayed, the pool paying payTo straight from the agent's note in one transaction (a payment anyone relayed first is recognized once); a refusal is success:false with x402's reason (docs/api.md 4.9)",
        SellerSettleResponseSchema,
      ),
      [ROUTES.agentRegister]: {
        ...post("Register an agent (prototype, docs/api.md 4.8); the answer carries the agent's key, shown once", AgentRegisterRequestSchema, AgentRegisterResponseSchema, "201"),
        get: {
          summary: "List agents (public fields), or look one up with ?id=agent_<id>: in full with its X-Agent-Key (prototype, docs/api.md 4.8)",
          parameters: [{ name: "id", in: "query", required: false, schema: { type: "string", pattern: "^agent_[0-9a-f]{16}$" } }, AGENT_KEY_PARAMETER],
          responses: {
            "200": {
              description: "the list, or the one agent (in full only with its key)",
              ...json(z.union([AgentListResponseSchema, AgentViewSchema, AgentPublicViewSchema]), "output"),
            },
            "400": errorResponse("INVALID_REQUEST: a malformed id or an unknown query parameter"),
            "401": errorResponse("AGENT_UNAUTHORIZED: an X-Agent-Key that is not the agent's"),
            "404": errorResponse("NOT_FOUND"),
            ...LIMITS,
          },
        },
      },
    },
  };
}
