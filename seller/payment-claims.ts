/**
 * Which shielded-proof payments a facilitator has settled (or is settling), by the spent note's nullifier hash: a
 * payment is answered `success` by one settle only, so a copy of it cannot buy a second request, even when the pool
 * paid it by someone else's transaction (which settle recognizes by its effect).
 */
export interface PaymentClaims {
  /**
   * Takes the payment of `nullifierHash` for one settle. False when it was taken already. `validBefore` (unix
   * seconds) is when the payment stops being relayable: after it no settle can succeed, so the claim may be dropped.
   */
  claim(nullifierHash: bigint, validBefore: number): Promise<boolean>;
  isClaimed(nullifierHash: bigint): Promise<boolean>;
  /** Gives a claim back: only when its settle sent nothing, so that the payment may still be settled once. */
  release(nullifierHash: bigint): Promise<void>;
}

/** Claims in this process's memory, dropped once their payment's window closed: for one facilitator process. */
export class MemoryPaymentClaims implements PaymentClaims {
  private readonly claims = new Map<bigint, number>();

  constructor(private readonly nowSeconds: () => number = () => Math.floor(Date.now() / 1000)) {}

  async claim(nullifierHash: bigint, validBefore: number): Promise<boolean> {
    this.dropClosed();
    if (this.claims.has(nullifierHash)) return false;
    this.claims.set(nullifierHash, validBefore);
    return true;
  }

  async isClaimed(nullifierHash: bigint): Promise<boolean> {
    return this.claims.has(nullifierHash);
  }

  async release(nullifierHash: bigint): Promise<void> {
    this.claims.delete(nullifierHash);
  }

  private dropClosed(): void {
    const now = this.nowSeconds();
    for (const [nullifierHash, validBefore] of this.claims) if (validBefore < now) this.claims.delete(nullifierHash);
  }
}
