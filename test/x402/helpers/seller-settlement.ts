import { decodePaymentResponseHeader } from "@x402/core/http";
import { expect } from "chai";

/** The seller's settlement transaction, from the payment response header of either x402 version. */
export function sellerSettlement(response: Response): string {
  const header = response.headers.get("PAYMENT-RESPONSE") ?? response.headers.get("X-PAYMENT-RESPONSE");
  expect(header, "payment response header").to.be.a("string");
  return decodePaymentResponseHeader(header!).transaction;
}
