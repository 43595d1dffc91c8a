import { getAddress, type Log } from "ethers";
import { ConfigError } from "../../lib/env-config.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";
import { formatUsdc } from "../pricing/pricing.js";
import type { RelayerStore } from "../store/relayer-store.js";
import { ROUTES } from "../http/paths.js";

export interface AccessFeeTerms {
  enforced: boolean;
  requiredFee: bigint;
  treasury: string;
}

/**
 * docs/api.md 3.3 and 5.3: the one-time access fee per deposit, verified on chain and recorded. A fee counts only when
 * paid through Entrypoint.payAccessFee (from a wallet) or relayAccessFee (out of a note, access-fee-relay.ts) naming
 * the note's nullifier hash: its AccessFeePaid event binds payer, note and amount. USDC transfers to the treasury (a relay's take among them) never count, and a payment names one note
 * only, so nobody can claim another's.
 */
export class AccessFeeGate {
  constructor(
    private readonly terms: AccessFeeTerms,
    private readonly store: RelayerStore,
    private readonly chain: PoolChain,
  ) {}

  get enforced(): boolean {
    return this.terms.enforced;
  }

  /** What one authorization costs, in atomic USDC. */
  get requiredFee(): bigint {
    return this.terms.requiredFee;
  }

  /** Where access fees must be paid: TREASURY_ADDRESS, the entrypoint's access-fee treasury. */
  get treasury(): string {
    return this.terms.treasury;
  }

  isAuthorized(nullifierHash: bigint): Promise<boolean> {
    return this.store.isAuthorized(nullifierHash);
  }

  /**
   * Refuses a start with the gate on whose TREASURY_ADDRESS is not the entrypoint's access-fee treasury: every
   * payment would go elsewhere and be refused.
   */
  async assertTreasuryMatches(): Promise<void> {
    if (!this.terms.enforced) return;
    const onChain = await this.chain.call(() => this.chain.entrypoint.accessFeeTreasury());
    if (getAddress(onChain) !== getAddress(this.terms.treasury)) {
      throw new ConfigError([
        `ACCESS_FEE_ENFORCED is on but TREASURY_ADDRESS ${this.terms.treasury} is not the entrypoint's access-fee treasury ${onChain}; ` +
          "the admin sets it with Entrypoint.setAccessFeeTreasury",
      ]);
    }
  }

  /** The docs/api.md 2.6 `authorization` block of a 402 answer. */
  instructions() {
    return {
      network: this.chain.network,
      treasury: this.terms.treasury,
      requiredFeeAtomic: this.terms.requiredFee.toString(),
      instructions:
        `Approve the entrypoint ${this.chain.deployment.entrypoint} for ${this.terms.requiredFee} atomic USDC ` +
        `(${formatUsdc(this.terms.requiredFee)} USDC) and call Entrypoint.payAccessFee(${this.chain.deployment.usdc}, <the note's nullifierHash>, ` +
        `${this.terms.requiredFee}) on ${this.chain.network}; it pays the treasury ${this.terms.treasury}. Then POST /api/facilitator/authorize ` +
        `with {network, accessTokenTxHash: that transaction's hash, nullifierHash} and retry. A plain USDC transfer to the treasury is not accepted. ` +
        `Or pay it out of the note itself, so that no wallet appears with it: POST ${ROUTES.quoteAccessFee} and ${ROUTES.accessFeeProof}.`,
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

  /** Verifies the transaction's AccessFeePaid events for `nullifierHash` and records the authorization. */
  async authorize(network: string, accessTokenTxHash: string, nullifierHash: bigint): Promise<void> {
    if (network !== this.chain.network) {
      throw new RelayerError("AUTHORIZATION_REJECTED", `This facilitator settles on ${this.chain.network}; the access fee must be paid there, not on ${network}.`);
    }
    const receipt = await this.chain.call(() => this.chain.provider.getTransactionReceipt(accessTokenTxHash));
    if (receipt === null || receipt.status !== 1) {
      throw new RelayerError("AUTHORIZATION_REJECTED", `No successful transaction ${accessTokenTxHash} on ${network}.`);
    }
    const payments = this.accessFeePayments(receipt.logs);
    const forThisNote = payments.filter((payment) => payment.nullifierHash === nullifierHash);
    if (forThisNote.length === 0) {
      throw new RelayerError(
        "AUTHORIZATION_REJECTED",
        payments.length === 0
          ? `Transaction ${accessTokenTxHash} made no Entrypoint.payAccessFee payment to the treasury ${this.terms.treasury}; a USDC transfer is not an access fee. Pay through Entrypoint.payAccessFee naming your note's nullifierHash.`
          : `Transaction ${accessTokenTxHash} pays the access fee of another note, not of nullifier hash ${nullifierHash}.`,
      );
    }
    const paid = forThisNote.reduce((sum, payment) => sum + payment.amount, 0n);
    if (paid < this.terms.requiredFee) {
      throw new RelayerError(
        "AUTHORIZATION_REJECTED",
        `Transaction ${accessTokenTxHash} pays ${paid} atomic USDC for this note; the access fee is ${this.terms.requiredFee}.`,
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

  /** The AccessFeePaid events of our entrypoint in `logs` that paid USDC to our treasury. */
  private accessFeePayments(logs: readonly Log[]): { nullifierHash: bigint; amount: bigint }[] {
    const { entrypoint, deployment } = this.chain;
    const paidEvent = entrypoint.getEvent("AccessFeePaid").fragment;
    const ours = (address: string, expected: string) => getAddress(address) === getAddress(expected);
    return logs
      .filter((log) => ours(log.address, deployment.entrypoint) && log.topics[0] === paidEvent.topicHash)
      .map((log) => entrypoint.interface.decodeEventLog(paidEvent, log.data, log.topics))
      .filter((event) => ours(event.asset as string, deployment.usdc) && ours(event.treasury as string, this.terms.treasury))
      .map((event) => ({ nullifierHash: event.nullifierHash as bigint, amount: event.amount as bigint }));
  }

  /** After a settle, the change note keeps its deposit's authorization. */
  async carryOver(spentNullifierHash: bigint, changeNullifierHash: bigint): Promise<void> {
    await this.store.inheritAuthorization(spentNullifierHash, changeNullifierHash);
  }
}
