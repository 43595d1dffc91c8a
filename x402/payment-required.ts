import { chainIdOfNetwork } from "./networks.js";
import {
  ExactRequirementSchema,
  PaymentRequiredSchema,
  PaymentRequiredV1Schema,
  type ExactRequirement,
  type PaymentRequired,
} from "./schemas.js";

/** v2 sellers put the 402's details, base64 JSON, in this response header; v1 sellers in the JSON body. */
const PAYMENT_REQUIRED_HEADER = "PAYMENT-REQUIRED";

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * The x402 payment requirements a 402 carries: the v2 PAYMENT-REQUIRED header when present (as the reference
 * client reads it), else a v1 JSON body. Undefined when the response carries neither: a generic 402.
 */
export function parsePaymentRequired(headers: Pick<Headers, "get">, body: string): PaymentRequired | undefined {
  const header = headers.get(PAYMENT_REQUIRED_HEADER);
  if (header !== null) {
    const fromHeader = PaymentRequiredSchema.safeParse(parseJson(Buffer.from(header, "base64").toString("utf8")));
    return fromHeader.success ? fromHeader.data : undefined;
  }
  const fromBody = PaymentRequiredV1Schema.safeParse(parseJson(body));
  return fromBody.success ? fromBody.data : undefined;
}

/** Reads a fetch Response's 402 with parsePaymentRequired (consumes the body). */
export async function readPaymentRequired(response: Response): Promise<PaymentRequired | undefined> {
  return parsePaymentRequired(response.headers, await response.text());
}

/** The seller's `exact` entry for `asset` on chain `chainId` (the agent's USDC), if it offers a well-formed one. */
export function selectExactRequirement(
  required: PaymentRequired,
  wanted: { chainId: number; asset: string },
): ExactRequirement | undefined {
  for (const entry of required.accepts) {
    const parsed = ExactRequirementSchema.safeParse(entry);
    if (
      parsed.success &&
      chainIdOfNetwork(parsed.data.network) === wanted.chainId &&
      parsed.data.asset.toLowerCase() === wanted.asset.toLowerCase()
    ) {
      return parsed.data;
    }
  }
  return undefined;
}
