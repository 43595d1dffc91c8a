import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import { BATCH_SETTLEMENT_SCHEME } from "@x402/evm";

// How a private tab reads a batch-settlement seller's answer (PrivateTabs, PrivateTabScheme): from the headers of a
// request the agent sent itself, or from what an @x402/core client's payment-response hook hands over.

/** @x402/evm's reason for a voucher whose base is not the seller's running total: its 402 then carries the seller's. */
export const CUMULATIVE_AMOUNT_MISMATCH = "invalid_batch_settlement_evm_cumulative_amount_mismatch";

/** The seller's answer to a tab payment, as x402 carries it: its settle response, its new 402, and the reason it gave. */
export interface TabAnswer {
  settle?: SettleResponse;
  required?: PaymentRequired;
  reason?: string;
  /** The HTTP status, where the agent sent the request itself. */
  status?: number;
}

/** The seller's PAYMENT-REQUIRED of a 402 answer, decoded; undefined for any other answer. */
function paymentRequiredOf(response: Response): PaymentRequired | undefined {
  const header = response.headers.get("PAYMENT-REQUIRED");
  if (response.status !== 402 || header === null) return undefined;
  try {
    return decodePaymentRequiredHeader(header);
  } catch {
    return undefined;
  }
}

/** What a seller's corrective 402 says of its running total on the channel, read from @x402/evm's `extra`; undefined for any other 402. */
export function correctiveStateOf(required: PaymentRequired) {
  try {
    if (required.error !== CUMULATIVE_AMOUNT_MISMATCH) return undefined;
    const entry = required.accepts.find((accept) => accept.scheme === BATCH_SETTLEMENT_SCHEME);
    const { channelState, voucherState } = (entry?.extra ?? {}) as {
      channelState?: { totalClaimed?: string; chargedCumulativeAmount?: string };
      voucherState?: { signedMaxClaimable?: string; signature?: string };
    };
    if (channelState?.chargedCumulativeAmount === undefined || voucherState?.signedMaxClaimable === undefined || voucherState.signature === undefined) return undefined;
    const optional = (value: string | undefined) => (value === undefined ? undefined : BigInt(value));
    return {
      charged: BigInt(channelState.chargedCumulativeAmount),
      signed: BigInt(voucherState.signedMaxClaimable),
      signature: voucherState.signature,
      totalClaimed: optional(channelState.totalClaimed),
    };
  } catch {
    return undefined;
  }
}

/**
 * The seller's answer as a tab reads it: its settle response (a success only when the seller took the payment, `ok`),
 * its new 402, and the reason it gave for refusing (the settle's, else the 402's).
 */
export function tabAnswerOf({ ok, settle, required, status }: { ok: boolean; settle?: SettleResponse; required?: PaymentRequired; status?: number }): TabAnswer {
  const reason = ok ? undefined : (settle?.errorReason ?? required?.error);
  return {
    ...(status !== undefined && { status }),
    ...(settle !== undefined && { settle: ok ? settle : { ...settle, success: false } }),
    ...(required !== undefined && { required }),
    ...(reason !== undefined && { reason }),
  };
}

/** The answer of a request the agent sent itself, from its x402 headers. */
export function answerOf(response: Response): TabAnswer {
  const header = response.headers.get("PAYMENT-RESPONSE");
  let settle: SettleResponse | undefined;
  try {
    settle = header === null ? undefined : decodePaymentResponseHeader(header);
  } catch {
    // An answer that is not x402's gives no settle response.
  }
  return tabAnswerOf({ ok: response.ok, settle, required: paymentRequiredOf(response), status: response.status });
}
