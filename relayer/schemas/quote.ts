import { z } from "zod";
import { MAX_TREE_DEPTH } from "../../sdk/index.js";
import { AddressSchema, Bytes32Schema, DecimalStringSchema, FieldElementSchema } from "../../sdk/schema/primitives.js";

const count = z.number().int().min(0);
const depth = count.max(MAX_TREE_DEPTH);

/** The fields of a quote, by what each holds: one list for the request (parsed) and the answer (wire) forms. */
const quoteFields = <N extends z.ZodType, A extends z.ZodType>(number: N, address: A) => ({
  /** The proof-carrying request it is for: a settle, a tab's deposit (open-tab), or an access fee paid out of the note (access-fee-proof). */
  route: z.enum(["settle", "settle-x402", "open-tab", "access-fee"]),
  nullifierHash: number,
  /** The entrypoint, the Withdrawal's processooor. */
  processooor: address,
  scope: number,
  /** Who the withdrawal pays: payTo (settle), the seller by the pool's authorization (settle-x402), the tab's TabPayer (open-tab) or the access-fee treasury (access-fee). */
  recipient: address,
  feeRecipient: address,
  feeBps: z.number().int().min(0).max(10_000),
  /** What leaves the pool, the proof's withdrawnValue; the recipient gets withdrawnValue - fee. */
  withdrawnValue: number,
  fee: number,
  /**
   * The proof's context: withdrawalContext({processooor, RelayData(recipient, feeRecipient, feeBps, payment)}, scope);
   * for an access fee, of {processooor, AccessFeeData(recipient, authorizedNullifierHash)}.
   */
  context: number,
  stateRoot: number,
  stateTreeDepth: depth,
  /** The state tree under stateRoot holds the first stateTreeSize leaves of GET /api/facilitator/trees. */
  stateTreeSize: count,
  aspRoot: number,
  aspTreeDepth: depth,
  aspTreeSize: count,
  /** Unix seconds: no new withdrawal is made for the quote after it. */
  expiresAt: count,
  /**
   * settle-x402: the pool's one EIP-3009 transfer to the seller, which the context binds through its PoolAuthorization:
   * its nonce (the note's nullifier hash) and its window, in unix seconds. open-tab: the tab the context binds through
   * its TabOpening: paymentNonce is the channel's id, paymentValidBefore the tab's reclaimableAfter (no validAfter).
   */
  paymentNonce: Bytes32Schema.optional(),
  paymentValidAfter: count.optional(),
  paymentValidBefore: count.optional(),
  /**
   * access-fee only: the nullifier hash the fee authorizes (the agent's change note's), which the context binds through
   * the withdrawal's AccessFeeData(treasury, authorizedNullifierHash); feeBps is then 0 and feeRecipient unused.
   */
  authorizedNullifierHash: number.optional(),
  /** The relayer's MAC over every other field; send the quote back unchanged. */
  signature: Bytes32Schema,
});

/** A quote as a proof-carrying settle sends it back (docs/api.md 4.10). */
export const QuoteSchema = z
  .object(quoteFields(FieldElementSchema, AddressSchema))
  .strict()
  .transform((quote) => ({ ...quote, feeBps: BigInt(quote.feeBps) }));

/** A quote as the relayer answers it: numbers above 2^53 as decimal strings. */
export const QuoteWireSchema = z.object(quoteFields(DecimalStringSchema, z.string())).strict();

export const QuoteResponseSchema = z.object({ quote: QuoteWireSchema }).strict();
