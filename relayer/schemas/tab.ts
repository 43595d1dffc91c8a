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
  /** What the tab holds: the single-use payer's deposit into the channel, at least one request's price. */
  depositAmount: AtomicAmountSchema,
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
  /** The single-use payer: the channel's payer, funded by the relay with exactly the deposit. */
  payer: address,
  channelConfig: ChannelConfigWireSchema,
  /** The channel's id: the EIP-712 hash of channelConfig under x402BatchSettlement's domain on this chain. */
  channelId: Bytes32Schema,
};

export const QuoteTabResponseSchema = z
  .object({
    quote: QuoteWireSchema,
    ...channelFields,
    /** The deposit authorization's salt: its nonce, the quote's paymentNonce, is keccak256(abi.encode(channelId, depositSalt)). */
    depositSalt: Bytes32Schema,
    /** The deposit authorization's validBefore (unix seconds): the tab's first request must reach the seller before it. */
    validBefore: z.number().int(),
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
    /**
     * The deposit half of the tab's first payment (@x402/evm's `payload.deposit`): the amount and the payer's ERC-3009
     * ReceiveWithAuthorization of it to x402's deposit collector, with the channel's deposit nonce.
     */
    deposit: z
      .object({
        amount: atomic,
        authorization: z
          .object({
            erc3009Authorization: z.object({ validAfter: atomic, validBefore: atomic, salt: Bytes32Schema, signature: z.string().regex(/^0x[0-9a-fA-F]+$/) }).strict(),
          })
          .strict(),
      })
      .strict(),
    fundingTxHash: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
    /** What left the pool: deposit + fee. */
    gross: atomic,
    fee: atomic,
    changeCommitment: atomic,
    replayed: z.boolean(),
    privacy: PrivacyBlockSchema,
  })
  .strict();
