import { getAddress, type Log } from "ethers";
import { ConfigError } from "../../lib/env-config.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";
import { formatUsdc } from "../pricing/pricing.js";
import type { RelayerStore, StoredAuthorization } from "../store/relayer-store.js";
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
  /**
   * @param relayCost The gas of a relay in atomic USDC that a spend must pay for now (Facilitator.chargedRelayCost):
   *   the fee floor while a take is charged, nothing on free-for-testing networks, where the operator pays relays
   *   knowingly. An access fee paid out of a note withdraws it on top of the fee.
   */
  constructor(
    private readonly terms: AccessFeeTerms,
    private readonly store: RelayerStore,
    private readonly chain: PoolChain,
    private readonly relayCost: () => Promise<bigint>,
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

  /** Whether the note of `nullifierHash` holds any authorization (for some label, when carried over). */
  async isAuthorized(nullifierHash: bigint): Promise<boolean> {
    return (await this.store.authorizationOf(nullifierHash)) !== undefined;
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
  async instructions() {
    const noteWithdrawal = await this.noteWithdrawal();
    return {
      network: this.chain.network,
      treasury: this.terms.treasury,
      requiredFeeAtomic: this.terms.requiredFee.toString(),
      noteWithdrawalAtomic: noteWithdrawal.toString(),
      instructions:
        `Approve the entrypoint ${this.chain.deployment.entrypoint} for ${this.terms.requiredFee} atomic USDC ` +
        `(${formatUsdc(this.terms.requiredFee)} USDC) and call Entrypoint.payAccessFee(${this.chain.deployment.usdc}, <the note's nullifierHash>, ` +
        `${this.terms.requiredFee}) on ${this.chain.network}; it pays the treasury ${this.terms.treasury}. Then POST /api/facilitator/authorize ` +
        `with {network, accessTokenTxHash: that transaction's hash, nullifierHash} and retry. A plain USDC transfer to the treasury is not accepted. ` +
        `Or pay it out of the note itself, so that no wallet appears with it: POST ${ROUTES.quoteAccessFee} and ${ROUTES.accessFeeProof} ` +
        `with withdrawnValue ${noteWithdrawal} (the fee and its relay's gas, all to the treasury).`,
    };
  }

  /** What an access fee paid out of a note must withdraw now: the fee, and the gas of its relay while a take is charged. */
  async noteWithdrawal(): Promise<bigint> {
    return this.terms.requiredFee + (await this.relayCost());
  }

  /**
   * Refuses an access fee paid out of a note that withdraws `amount`, less than noteWithdrawal: the operator, who
   * relays it, would pay more gas than it is paid (BELOW_FEE_FLOOR), or the treasury would get less than the fee.
   */
  async assertCoversRelay(amount: bigint): Promise<void> {
    const smallest = await this.noteWithdrawal();
    if (amount >= smallest) return;
    const relayCost = smallest - this.terms.requiredFee;
    throw new RelayerError(
      relayCost > 0n ? "BELOW_FEE_FLOOR" : "INVALID_PAYMENT_AMOUNT",
      `An access fee paid out of a note of ${amount} atomic USDC is less than the fee ${this.terms.requiredFee}` +
        (relayCost > 0n ? ` plus the gas of its relay, ${relayCost} atomic at the fee floor (the operator relays it; no take pays for it)` : "") +
        `. Withdraw at least ${smallest} atomic (withdrawnValue ${smallest}); nothing was proven or spent.`,
    );
  }

  /**
   * Throws the 402 NULLIFIER_NOT_AUTHORIZED answer when the gate is on and the note has no authorization that holds
   * for it: none recorded for its nullifier hash, or one carried over from a custodial spend of a deposit whose label
   * is not `label`, the note's label where the spend shows it (a custodial spend; an agent's proof shows none, nothing
   * of it links to its deposit: docs/design.md 10).
   */
  async assertAuthorized(nullifierHash: bigint, label?: bigint): Promise<void> {
    if (!this.terms.enforced) return;
    const authorization = await this.store.authorizationOf(nullifierHash);
    if (authorization !== undefined && holdsFor(authorization, label)) return;
    const why =
      authorization === undefined
        ? "This deposit has not paid the access fee."
        : "This note's nullifier hash holds an access fee carried over from a custodial spend, which holds only for a note of that deposit's label, and this request does not show the note's label (a proof shows nothing that links it to its deposit).";
    throw new RelayerError(
      "NULLIFIER_NOT_AUTHORIZED",
      `${why} Pay it once as \`authorization.instructions\` says; settles are then unlimited.`,
      { authorization: await this.instructions() },
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
    // One transaction may pay the fees of several notes, each named by its own event: each is authorized once.
    await this.store.recordAuthorization({ nullifierHash, network, accessTokenTxHash, amount: paid, authorizedAt: new Date().toISOString() });
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

  /**
   * After a custodial spend, the change note keeps its deposit's authorization, for a note of the deposit's `label`
   * only: the change note's nullifier is the request's to choose, so it may be another deposit's.
   */
  async carryOver(spentNullifierHash: bigint, changeNullifierHash: bigint, label: bigint): Promise<void> {
    await this.store.inheritAuthorization(spentNullifierHash, changeNullifierHash, label);
  }
}

/** Whether `authorization` holds for a note whose spend shows `label` (none: an agent's proof). */
function holdsFor(authorization: StoredAuthorization, label: bigint | undefined): boolean {
  return !authorization.inherited || (authorization.label !== null && authorization.label === label);
}
