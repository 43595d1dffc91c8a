import { domainNamedBy, missingDomainMessage } from "./eip712-domain.js";
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

/** v2 sellers put the settlement's outcome, base64 JSON, in PAYMENT-RESPONSE; v1 sellers in X-PAYMENT-RESPONSE. */
const PAYMENT_RESPONSE_HEADERS = ["PAYMENT-RESPONSE", "X-PAYMENT-RESPONSE"] as const;

/** A seller's payment response header (either version's), as sent; undefined when there is none. */
export function paymentResponseHeaderOf(headers: Pick<Headers, "get">): string | undefined {
  return PAYMENT_RESPONSE_HEADERS.map((name) => headers.get(name)).find((value) => value !== null) ?? undefined;
}

/** Why the seller's facilitator did not settle: the `errorReason` of its payment response, when it gives one. */
export function settlementErrorOf(headers: Pick<Headers, "get">): string | undefined {
  const header = paymentResponseHeaderOf(headers);
  const decoded = header === undefined ? undefined : parseJson(Buffer.from(header, "base64").toString("utf8"));
  const reason = (decoded as { errorReason?: unknown } | undefined)?.errorReason;
  return typeof reason === "string" ? reason : undefined;
}

/** The agent's asset on its chain: the only entries it can pay. */
export interface WantedAsset {
  chainId: number;
  asset: string;
}

/** The seller's `exact` entries for the wanted asset and chain, read loosely: well formed or not. */
function offersOf(required: PaymentRequired, wanted: WantedAsset): Record<string, unknown>[] {
  return required.accepts.filter(
    (entry) =>
      entry.scheme === "exact" &&
      chainIdOfNetwork(entry.network) === wanted.chainId &&
      typeof entry.asset === "string" &&
      entry.asset.toLowerCase() === wanted.asset.toLowerCase(),
  );
}

/** The seller's `exact` entry for `asset` on chain `chainId` (the agent's USDC), if it offers a well-formed one. */
export function selectExactRequirement(required: PaymentRequired, wanted: WantedAsset): ExactRequirement | undefined {
  for (const entry of offersOf(required, wanted)) {
    const parsed = ExactRequirementSchema.safeParse(entry);
    if (parsed.success) return parsed.data;
  }
  return undefined;
}

/**
 * Why selectExactRequirement found nothing: an entry for the wanted asset that names no EIP-712 domain is refused
 * by the shared rule (eip712-domain.ts), a malformed one names its first problem, else none is offered.
 */
export function whyNoExactRequirement(required: PaymentRequired, wanted: WantedAsset): string {
  const [offer] = offersOf(required, wanted);
  if (offer === undefined) return `The seller offers no exact payment in ${wanted.asset} on chain ${wanted.chainId}.`;
  if (domainNamedBy(offer) === undefined) return missingDomainMessage({ asset: wanted.asset });
  const issue = ExactRequirementSchema.safeParse(offer).error?.issues[0];
  return `The seller's exact entry for ${wanted.asset} is malformed${issue === undefined ? "" : ` (${issue.path.join(".")}: ${issue.message})`}.`;
}
