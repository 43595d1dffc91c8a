/**
 * Which shielded-proof payments a facilitator is relaying now, by the spent note's nullifier hash: one settle at a
 * time sends a payment's relay. A claim is a lease: a settle that died after sending leaves it, and once it lapses
 * the next settle reads the chain (the payment paid by that relay is recognized) or relays again (a relay that was
 * never mined spent nothing). Claims keep no answer: whether a payment was served is the seller's record
 * (ServedPayments), and a payment the pool paid is answered `success` whenever it is settled.
 */
export interface PaymentClaims {
  /** Takes the payment of `nullifierHash` for `leaseSeconds`. False while another settle's claim holds. */
  claim(nullifierHash: bigint, leaseSeconds: number): Promise<boolean>;
  /** Gives a claim back: its settle ended, and the payment may be settled again. */
  release(nullifierHash: bigint): Promise<void>;
}

/** Claims in this process's memory: for one facilitator process (another one's relay of a copy only reverts). */
export class MemoryPaymentClaims implements PaymentClaims {
  private readonly claims = new Map<bigint, number>();

  constructor(private readonly nowSeconds: () => number = () => Math.floor(Date.now() / 1000)) {}

  async claim(nullifierHash: bigint, leaseSeconds: number): Promise<boolean> {
    const now = this.nowSeconds();
    for (const [claimed, until] of this.claims) if (until <= now) this.claims.delete(claimed);
    if (this.claims.has(nullifierHash)) return false;
    this.claims.set(nullifierHash, now + leaseSeconds);
    return true;
  }

  async release(nullifierHash: bigint): Promise<void> {
    this.claims.delete(nullifierHash);
  }
}
