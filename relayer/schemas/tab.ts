import { z } from "zod";
import { AddressSchema, AtomicAmountSchema, Bytes32Schema, FieldElementSchema } from "../../sdk/schema/primitives.js";
import { BatchSettlementRequirementSchema } from "../../sdk/x402/batch-settlement.js";
import { AgentFieldsSchema } from "./payment.js";
import { PrivacyBlockSchema } from "./privacy.js";
import { WithdrawProofSchema } from "./proof.js";
import { QuoteSchema, QuoteWireSchema } from "./quote.js";

/** What quote-tab and open-tab name besides the note: the seller's entry, the channel's agent side, the deposit. */
const tabFields = {
  /** The seller's `batch-settlement` entry, as its 402 gave it. */
  accepts: BatchSettlementRequirementSchema,
  /** The address of the key the agent made for the tab: the channel's payerAuthorizer, the only signer of its vouchers. */
  payerAuthorizer: AddressSchema,
  /** The channel's salt (ChannelConfig.salt), the agent's. */
  salt: Bytes32Schema,
  /** What the tab holds: the relay's deposit into the channel, at least one request's price. */
  depositAmount: AtomicAmountSchema,
  /**
   * When the tab's lifetime ends (unix seconds): from then on anyone may take back what the seller did not claim
   * (Entrypoint.withdrawTab). The proof binds it. At most 30 days ahead.
   */
  reclaimableAfter: z.number().int().positive(),
  acceptNotPrivate: z.boolean().default(false),
  ...AgentFieldsSchema,
};

/** POST /api/facilitator/quote-tab (docs/api.md 4.11): the tab's terms, the note by its nullifier hash only. */
export const QuoteTabRequestSchema = z.object({ ...tabFields, nullifierHash: FieldElementSchema }).strict();

const address = z.string();
const atomic = z.string().regex(/^[0-9]+$/);

/** @x402/evm's ChannelConfig as the relayer built it; the deposit payment carries it to the seller. */
const ChannelConfigWireSchema = z
  .object({
    payer: address,
    payerAuthorizer: address,
    receiver: address,
    receiverAuthorizer: address,
    token: address,
    withdrawDelay: z.number().int(),
    salt: Bytes32Schema,
  })
  .strict();

/** The channel a tab's quote or open answer names. */
const channelFields = {
  /**
   * The tab's payer: the note's TabPayer (Entrypoint.tabPayerOf its nullifier hash), a keyless clone that whatever the
   * channel gives back reaches, and that gives it only to the pool as the agent's refund note.
   */
  payer: address,
  channelConfig: ChannelConfigWireSchema,
  /** The channel's id: the EIP-712 hash of channelConfig under x402BatchSettlement's domain on this chain. */
  channelId: Bytes32Schema,
  /** The request's reclaimableAfter, which the quote's context binds. */
  reclaimableAfter: z.number().int(),
};

export const QuoteTabResponseSchema = z
  .object({
    quote: QuoteWireSchema,
    ...channelFields,
  })
  .strict();

/** POST /api/facilitator/open-tab (docs/api.md 4.11): quote-tab's terms with the agent's proof of its quote. */
export const OpenTabRequestSchema = z
  .object({
    ...tabFields,
    quote: QuoteSchema,
    proof: WithdrawProofSchema,
    /** As settle-x402-proof's: 32 random bytes of this request, what makes a retry the agent's. */
    retryKey: Bytes32Schema,
  })
  .strict();

export const OpenTabResponseSchema = z
  .object({
    opened: z.literal(true),
    ...channelFields,
    /** The relay that spent the note and deposited into the channel, in one transaction: the tab is funded once it is mined. */
    fundingTxHash: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
    /** What left the pool: deposit + fee. */
    gross: atomic,
    fee: atomic,
    changeCommitment: atomic,
    replayed: z.boolean(),
    privacy: PrivacyBlockSchema,
  })
  .strict();
