import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** The request a reference is issued for: its method and path, and the price it is asked for there. */
export interface ReferencedRequest {
  method: string;
  path: string;
  payTo: string;
  amount: string;
}

const DOMAIN = "x402-privacy-facilitator/shielded-reference/v1";
const EXPIRY_BYTES = 8;
const NONCE_BYTES = 8;
const MAC_BYTES = 16;
/** How far a payment's window may outlast its reference: the buyer's clock against the seller's. */
export const REFERENCE_CLOCK_SLACK_SECONDS = 60;

/**
 * The seller's references of the requests it asks payment for, 32 bytes each: when it expires (8 bytes), a random
 * nonce (8) and an HMAC-SHA256 (first 16 bytes) of both with the request's method, path, payTo and amount under the
 * seller's secret. A shielded-proof payment's proof binds the reference, so the seller can tell, with no state of its
 * own, that a payment was made for this request and not for another of its routes or prices.
 *
 * A reference is judged against the window of the payment that carries it, not against the clock: a payment made
 * while its reference was live closes its window by the reference's expiry, so it can be presented again after a
 * crash or an outage, whenever that is; a payment made later with an old reference cannot.
 */
export class RequestReferences {
  constructor(
    private readonly secret: Uint8Array,
    private readonly nowSeconds: () => number = () => Math.floor(Date.now() / 1000),
  ) {
    if (secret.length < 32) throw new RangeError("a reference secret needs at least 32 bytes");
  }

  /** A fresh reference of `request`, valid for `lifetimeSeconds`. */
  issue(request: ReferencedRequest, lifetimeSeconds: number): string {
    const expiry = Buffer.alloc(EXPIRY_BYTES);
    expiry.writeBigUInt64BE(BigInt(this.nowSeconds() + lifetimeSeconds));
    const nonce = randomBytes(NONCE_BYTES);
    return `0x${Buffer.concat([expiry, nonce, this.mac(request, expiry, nonce)]).toString("hex")}`;
  }

  /**
   * Why `reference` does not vouch for a payment of `request` whose window closes at `validBefore` (unix seconds),
   * or undefined when it does.
   */
  problem(reference: string, request: ReferencedRequest, validBefore: number): string | undefined {
    const bytes = /^0x[0-9a-fA-F]{64}$/.test(reference) ? Buffer.from(reference.slice(2), "hex") : undefined;
    if (bytes === undefined) return "the reference is not 32 bytes of hex";
    const expiry = bytes.subarray(0, EXPIRY_BYTES);
    const nonce = bytes.subarray(EXPIRY_BYTES, EXPIRY_BYTES + NONCE_BYTES);
    if (!timingSafeEqual(bytes.subarray(EXPIRY_BYTES + NONCE_BYTES), this.mac(request, expiry, nonce))) {
      return `the reference was not issued by this seller for ${request.method} ${request.path} at this price and payee`;
    }
    if (BigInt(validBefore) > expiry.readBigUInt64BE() + BigInt(REFERENCE_CLOCK_SLACK_SECONDS)) {
      return "the payment's window outlasts its reference: the reference had expired when it was made; ask for the resource again";
    }
    return undefined;
  }

  private mac(request: ReferencedRequest, expiry: Buffer, nonce: Buffer): Buffer {
    const message = [DOMAIN, request.method.toUpperCase(), request.path, request.payTo.toLowerCase(), request.amount, expiry.toString("hex"), nonce.toString("hex")];
    return createHmac("sha256", this.secret).update(message.join("\n")).digest().subarray(0, MAC_BYTES);
  }
}
