import { getAddress, isAddress } from "ethers";
import { z } from "zod";
import { encodeSellerPayment, withdrawalContext, type SellerPayment } from "../circuit/context.js";
import { namePublicSignals, type WithdrawPublicSignals } from "../circuit/public-signals.js";
import { chainIdOfNetwork } from "./networks.js";

/**
 * The `exact` scheme's asset transfer method in which the pool pays the seller's payTo straight from the agent's note
 * (docs/x402-interop.md, "Shielded proof"): the agent's payment carries a withdrawal proof bound to the seller's
 * terms, and the seller's facilitator relays it when the seller settles, in one transaction. The x402 proposal's
 * `shielded` method has the client send the withdrawal itself and present a transaction hash; this one moves nothing
 * before the seller's facilitator verified the payment and settles it.
 */
export const SHIELDED_PROOF = "shielded-proof";

/** Fields of a shielded-proof entry's `extra` that change with every 402 (the seller's matching skips them). */
export const SHIELDED_DYNAMIC_EXTRA_FIELDS = ["reference"] as const;

const EvmAddressSchema = z
  .string()
  .refine((s) => /^0x[0-9a-fA-F]{40}$/.test(s) && isAddress(s), { message: "must be a 0x-prefixed 20-byte address" });
const Bytes32HexSchema = z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be 0x-prefixed 32-byte hex");
const AtomicStringSchema = z.string().regex(/^(0|[1-9][0-9]{0,37})$/, "must be an atomic amount as a canonical integer string");
const PositiveAtomicStringSchema = z.string().regex(/^[1-9][0-9]{0,37}$/, "must be a positive atomic amount as a canonical integer string");
const DecimalSchema = z.string().regex(/^(0|[1-9][0-9]{0,77})$/, "must be a canonical decimal integer string");

/**
 * What a facilitator that relays shielded-proof payments announces (its `supported` kind's `extra`), and what the
 * seller's server copies into the entry's `extra`: where the proof is relayed and what relaying it is paid.
 */
export const ShieldedFacilitatorExtraSchema = z.looseObject({
  assetTransferMethod: z.literal(SHIELDED_PROOF),
  /** The pools the payment may come from, as in the x402 proposal (the token's Transfer comes from the pool). */
  poolContracts: z.array(EvmAddressSchema).min(1),
  /** The entrypoint that relays it: the proof's processooor. */
  entrypoint: EvmAddressSchema,
  /** Who the facilitator has paid for relaying; the proof binds it. */
  feeRecipient: EvmAddressSchema,
  /** The least fee it relays for, in atomic units of the asset; the agent pays it on top of the price. */
  fee: AtomicStringSchema,
});
export type ShieldedFacilitatorExtra = z.infer<typeof ShieldedFacilitatorExtraSchema>;

/** A shielded-proof entry's `extra` in a 402: the facilitator's terms and the seller's reference of this request. */
export const ShieldedRequirementExtraSchema = ShieldedFacilitatorExtraSchema.extend({
  /** The seller's reference of the request being paid, 32 bytes: the proof binds it, so a payment pays that request. */
  reference: Bytes32HexSchema,
});
export type ShieldedRequirementExtra = z.infer<typeof ShieldedRequirementExtraSchema>;

/** An x402 v2 `accepts` entry of the `exact` scheme paid by shielded proof. */
export const ShieldedRequirementSchema = z.looseObject({
  scheme: z.literal("exact"),
  network: z.string().refine((network) => /^eip155:[1-9][0-9]*$/.test(network), "must be a CAIP-2 EVM network id"),
  asset: EvmAddressSchema,
  payTo: EvmAddressSchema,
  amount: PositiveAtomicStringSchema,
  maxTimeoutSeconds: z.number().int().positive(),
  extra: ShieldedRequirementExtraSchema,
});
export type ShieldedRequirement = z.infer<typeof ShieldedRequirementSchema>;

/** The payload of a shielded-proof payment: the agent's withdrawal proof and what the facilitator needs to relay it. */
export const ShieldedPayloadSchema = z
  .object({
    proof: z
      .object({
        pi_a: z.array(DecimalSchema).length(3),
        pi_b: z.array(z.array(DecimalSchema).length(2)).length(3),
        pi_c: z.array(DecimalSchema).length(3),
        protocol: z.literal("groth16"),
        curve: z.literal("bn128"),
      })
      .strict(),
    publicSignals: z.array(DecimalSchema).length(7),
    /** The size of the state tree whose root the proof uses (the pool reads that slot of its root history). */
    stateTreeSize: DecimalSchema,
    /** Unix seconds: the pool refuses the relay from then on, so an unsettled payment stops binding the note. */
    validBefore: DecimalSchema,
    /** The spent note's nullifier hash, 0x-prefixed 32 bytes, as the x402 proposal lists nullifiers. */
    nullifiers: z.array(Bytes32HexSchema).length(1),
  })
  .strict();
export type ShieldedPayload = z.infer<typeof ShieldedPayloadSchema>;

/** An x402 v2 payment by shielded proof: the seller's entry unchanged, and the agent's proof. */
export interface ShieldedPaymentPayload {
  x402Version: 2;
  resource?: { url: string; description?: string; mimeType?: string };
  accepted: ShieldedRequirement;
  payload: ShieldedPayload;
}

/** Whether a seller's entry offers the shielded-proof method (whatever else it says). */
export function offersShieldedProof(entry: { scheme?: unknown; extra?: unknown }): boolean {
  return entry.scheme === "exact" && (entry.extra as { assetTransferMethod?: unknown } | undefined)?.assetTransferMethod === SHIELDED_PROOF;
}

/** The Entrypoint SellerPayment a payment for `requirement` with this fee and window makes. */
export function sellerPaymentFor(requirement: ShieldedRequirement, fee: bigint, validBefore: bigint): SellerPayment {
  return {
    payTo: getAddress(requirement.payTo),
    amount: BigInt(requirement.amount),
    feeRecipient: getAddress(requirement.extra.feeRecipient),
    fee,
    requestReference: requirement.extra.reference,
    validBefore,
  };
}

/** The proof's context for a SellerPayment relayed by `entrypoint` from the pool of `scope`. */
export function sellerPaymentContext(payment: SellerPayment, entrypoint: string, scope: bigint): bigint {
  return withdrawalContext({ processooor: entrypoint, data: encodeSellerPayment(payment) }, scope);
}

/** A payload read against the entry it pays: its signals by name and the SellerPayment its relay would make. */
export interface ReadShieldedPayment {
  signals: WithdrawPublicSignals;
  payment: SellerPayment;
  nullifierHash: bigint;
  stateTreeSize: bigint;
}

/**
 * Reads `payload` against `requirement`: the SellerPayment is the entry's terms with the fee the proof withdraws on
 * top of the price (withdrawnValue - amount) and the payload's window. Whether the proof binds it is checked apart
 * (shieldedTermsProblems), since a proof that binds other terms still reads.
 */
export function readShieldedPayment(payload: ShieldedPayload, requirement: ShieldedRequirement): ReadShieldedPayment {
  const signals = namePublicSignals(payload.publicSignals);
  const fee = signals.withdrawnValue - BigInt(requirement.amount);
  return {
    signals,
    payment: sellerPaymentFor(requirement, fee, BigInt(payload.validBefore)),
    nullifierHash: signals.nullifierHash,
    stateTreeSize: BigInt(payload.stateTreeSize),
  };
}

/**
 * What keeps a read payment from paying exactly the entry's terms through `entrypoint` from the pool of `scope`: the
 * proof's context must be the SellerPayment's, its fee no rate, the nullifier listed the proof's, the fee at least
 * the entry's. Empty when it binds them.
 */
export function shieldedTermsProblems(
  read: ReadShieldedPayment,
  payload: ShieldedPayload,
  requirement: ShieldedRequirement,
  chain: { chainId: number; entrypoint: string; scope: bigint },
): string[] {
  const { signals, payment } = read;
  return [
    chainIdOfNetwork(requirement.network) !== chain.chainId && `it is for ${requirement.network}, not eip155:${chain.chainId}`,
    requirement.extra.entrypoint.toLowerCase() !== chain.entrypoint.toLowerCase() && `its entrypoint ${requirement.extra.entrypoint} is not ${chain.entrypoint}`,
    payment.fee < 0n && `it withdraws ${signals.withdrawnValue}, less than the price ${requirement.amount}`,
    payment.fee >= 0n && payment.fee < BigInt(requirement.extra.fee) && `its fee ${payment.fee} is below the facilitator's ${requirement.extra.fee}`,
    signals.relayFeeBPS !== 0n && `its proof takes a relay fee of ${signals.relayFeeBPS} bps; a seller payment's fee is no rate`,
    BigInt(payload.nullifiers[0]!) !== read.nullifierHash && "it lists another nullifier hash than its proof's",
    payment.fee >= 0n &&
      signals.context !== sellerPaymentContext(payment, chain.entrypoint, chain.scope) &&
      "its proof does not bind this seller's payTo, amount, fee recipient, fee, reference and window",
  ].filter((problem): problem is string => typeof problem === "string");
}

/**
 * Why a seller or its facilitator did not take a shielded-proof payment now, though it may later: an outage (the
 * chain, the facilitator or the seller's record unreachable), or the same payment being settled or served by another
 * request. The payment is not refused: presented again, it is served once. `settlement_pending` is x402's own.
 */
export const SHIELDED_RETRYABLE_REASONS = {
  facilitatorUnavailable: "shielded_facilitator_unavailable",
  sellerUnavailable: "shielded_seller_unavailable",
  inProgress: "shielded_payment_in_progress",
  settlementPending: "settlement_pending",
} as const;

const RETRYABLE = new Set<string>(Object.values(SHIELDED_RETRYABLE_REASONS));

/** Whether a seller's reason for not serving a shielded-proof payment means: present the same payment again. */
export function isRetryableShieldedReason(reason: string | undefined): boolean {
  return reason !== undefined && RETRYABLE.has(reason);
}
