import { TestUSDC__factory } from "../types/ethers-contracts/index.js";
import type { PoolChain } from "./chain/pool-chain.js";
import { RelayerError } from "./errors.js";
import { formatUsdc } from "./pricing.js";
import type { RelayerStore } from "./store/relayer-store.js";

// Only the ERC-20 Transfer event is read, which real USDC and the test token share.
const erc20 = TestUSDC__factory.createInterface();

export interface AccessFeeTerms {
  enforced: boolean;
  requiredFee: bigint;
  treasury: string;
}

/** Spec 3.3 and 5.3: the one-time access fee per deposit, verified on chain and recorded. */
export class AccessFeeGate {
  constructor(
    private readonly terms: AccessFeeTerms,
    private readonly store: RelayerStore,
    private readonly chain: PoolChain,
  ) {}

  get enforced(): boolean {
    return this.terms.enforced;
  }

  /** The spec 2.6 `authorization` block of a 402 answer. */
  instructions() {
    return {
      network: this.chain.network,
      treasury: this.terms.treasury,
      requiredFeeAtomic: this.terms.requiredFee.toString(),
      instructions:
        `Transfer at least ${this.terms.requiredFee} atomic USDC (${formatUsdc(this.terms.requiredFee)} USDC) to ${this.terms.treasury} ` +
        `on ${this.chain.network}, then POST /api/facilitator/authorize with {network, accessTokenTxHash, nullifierHash} and retry.`,
    };
  }

  /** Throws the 402 NULLIFIER_NOT_AUTHORIZED answer when the gate is on and the note has no authorization. */
  async assertAuthorized(nullifierHash: bigint): Promise<void> {
    if (!this.terms.enforced || (await this.store.isAuthorized(nullifierHash))) return;
    throw new RelayerError(
      "NULLIFIER_NOT_AUTHORIZED",
      "This deposit has not paid the access fee. Pay it once as `authorization.instructions` says; settles are then unlimited.",
      { authorization: this.instructions() },
    );
  }

  /** Verifies the access-fee transfer on chain and records it for `nullifierHash`. */
  async authorize(network: string, accessTokenTxHash: string, nullifierHash: bigint): Promise<void> {
    if (network !== this.chain.network) {
      throw new RelayerError("AUTHORIZATION_REJECTED", `This facilitator settles on ${this.chain.network}; the access fee must be paid there, not on ${network}.`);
    }
    const receipt = await this.chain.call(() => this.chain.provider.getTransactionReceipt(accessTokenTxHash));
    if (receipt === null || receipt.status !== 1) {
      throw new RelayerError("AUTHORIZATION_REJECTED", `No successful transaction ${accessTokenTxHash} on ${network}.`);
    }
    const paid = receipt.logs
      .filter((log) => log.address.toLowerCase() === this.chain.deployment.usdc.toLowerCase())
      .map((log) => erc20.parseLog(log))
      .filter((event) => event?.name === "Transfer" && String(event.args.to).toLowerCase() === this.terms.treasury.toLowerCase())
      .reduce((sum, event) => sum + BigInt(event!.args.value), 0n);
    if (paid < this.terms.requiredFee) {
      throw new RelayerError(
        "AUTHORIZATION_REJECTED",
        `Transaction ${accessTokenTxHash} pays ${paid} atomic USDC to the treasury ${this.terms.treasury}; the access fee is ${this.terms.requiredFee}.`,
      );
    }
    const recorded = await this.store.recordAuthorization({
      nullifierHash,
      network,
      accessTokenTxHash,
      amount: paid,
      authorizedAt: new Date().toISOString(),
    });
    if (!recorded && !(await this.store.isAuthorized(nullifierHash))) {
      throw new RelayerError("AUTHORIZATION_REJECTED", `Transaction ${accessTokenTxHash} already paid the access fee of another deposit.`);
    }
  }

  /** After a settle, the change note keeps its deposit's authorization. */
  async carryOver(spentNullifierHash: bigint, changeNullifierHash: bigint): Promise<void> {
    await this.store.inheritAuthorization(spentNullifierHash, changeNullifierHash);
  }
}
