import type { FacilitatorContext, Network, PaymentPayload, PaymentRequirements, SchemeNetworkFacilitator, SettleResponse, VerifyResponse } from "@x402/core/types";
import { Transaction, type Provider, type TransactionReceipt, type Wallet } from "ethers";
import { IEntrypoint__factory } from "../types/ethers-contracts/factories/contracts/interfaces/IEntrypoint__factory.js";
import { IPrivacyPool__factory } from "../types/ethers-contracts/factories/contracts/interfaces/IPrivacyPool__factory.js";
import type { Registry } from "prom-client";
import { MemoryPaymentClaims, type PaymentClaims } from "./payment-claims.js";
import { SellerPaymentMetrics } from "./payment-metrics.js";
import { cappedFeeFields, RelayNotSent, RelayPending, RelayReverted, ShieldedPayments, spendingTransaction, type ShieldedPaymentsDeps, type ShieldedRelay } from "./shielded-payments.js";
import { ShieldedPaymentsScheme } from "./shielded-payments-scheme.js";

/** The prefix of the plug-in's metrics: shielded_facilitator_payments_settled_total and the rest (SellerPaymentMetrics). */
export const SHIELDED_FACILITATOR_METRICS_PREFIX = "shielded_facilitator_";

export interface ShieldedFacilitatorSchemeOptions {
  /**
   * The `exact` facilitator scheme for payments that are not shielded proofs (ExactEvmScheme of @x402/evm): the x402
   * facilitator holds one `exact` scheme per network, so this one hands it every other payment.
   */
  inner?: SchemeNetworkFacilitator;
  /** The account that relays and pays the gas, connected to the chain's provider. */
  wallet: Wallet;
  /** The pool's deployment (lib/address-book.ts has it as deployments/<chainId>.json). */
  deployment: ShieldedPaymentsDeps["deployment"];
  /** Who the fees go to (accrued in the pool: PrivacyPool.claimFees); the wallet's address by default. */
  feeRecipient?: string;
  /** The least fee, in atomic USDC, announced in `supported`; a payment must also pay its relay's gas at the moment. */
  minimumFee: bigint;
  /** Atomic USDC per ETH: converts the relay's gas into the fee that pays for it. */
  usdcPerEth: bigint;
  /** Where settled payments are remembered; this process's memory by default. */
  claims?: PaymentClaims;
  /** How far back settle looks for the transaction that paid a payment someone else relayed (blocks; default 10,000). */
  spendLookbackBlocks?: number;
  /** How long a relay is waited for once sent (default 30 s); then the settle answers `settlement_pending`. */
  inclusionTimeoutMs?: number;
  /** The longest one read of the chain may take before a payment is answered as an outage (default 10 s). */
  chainTimeoutMs?: number;
  /** Where to count the payments it settles and refuses, under SHIELDED_FACILITATOR_METRICS_PREFIX (docs/operations.md). */
  metrics?: Registry;
}

/** How often a sent relay's receipt is asked for. */
const RECEIPT_POLL_MS = 250;

/**
 * The `exact` scheme of an @x402/core facilitator (`x402Facilitator.register(network, scheme)`) that relays
 * shielded-proof payments (ShieldedPayments) from `wallet`, and hands every other payment to the inner scheme.
 */
export class ShieldedFacilitatorScheme implements SchemeNetworkFacilitator {
  readonly scheme = "exact";
  readonly caipFamily = "eip155:*";
  private readonly payments: ShieldedPayments;
  private readonly metrics?: SellerPaymentMetrics;
  /** Shielded-proof payments to `payments`, the others to the inner scheme. */
  private readonly dispatch: ShieldedPaymentsScheme;
  /** The tail of the wallet's relays, which sign and leave one at a time so that nonces follow each other. */
  private sending: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: ShieldedFacilitatorSchemeOptions) {
    const { wallet, deployment } = options;
    const provider = wallet.provider;
    if (provider === null) throw new Error("The shielded facilitator's wallet must be connected to the chain's provider.");
    const pool = IPrivacyPool__factory.connect(deployment.privacyPool, provider);
    this.payments = new ShieldedPayments({
      deployment,
      entrypoint: IEntrypoint__factory.connect(deployment.entrypoint, provider),
      pool,
      settler: wallet.address,
      feeRecipient: options.feeRecipient ?? wallet.address,
      minimumFee: options.minimumFee,
      usdcPerEth: options.usdcPerEth,
      gasPrice: async () => {
        const fees = await provider.getFeeData();
        const price = fees.maxFeePerGas ?? fees.gasPrice;
        if (price === null) throw new Error("the chain's provider gives no gas price");
        return price;
      },
      claims: options.claims ?? new MemoryPaymentClaims(),
      ...(options.chainTimeoutMs !== undefined && { chainTimeoutMs: options.chainTimeoutMs }),
      sendRelay: (relay) => this.sendRelay(relay),
      findSpend: (nullifierHash) => spendingTransaction(pool, nullifierHash, options.spendLookbackBlocks),
    });
    this.metrics = options.metrics && new SellerPaymentMetrics(options.metrics, SHIELDED_FACILITATOR_METRICS_PREFIX);
    this.dispatch = new ShieldedPaymentsScheme({ payments: this.payments, settler: wallet.address, inner: options.inner, metrics: this.metrics });
  }

  getExtra(network: Network): Record<string, unknown> | undefined {
    return this.dispatch.getExtra(network);
  }

  getSigners(network: string): string[] {
    return this.dispatch.getSigners(network);
  }

  verify(payload: PaymentPayload, requirements: PaymentRequirements, context?: FacilitatorContext): Promise<VerifyResponse> {
    return this.dispatch.verify(payload, requirements, context);
  }

  settle(payload: PaymentPayload, requirements: PaymentRequirements, context?: FacilitatorContext): Promise<SettleResponse> {
    return this.dispatch.settle(payload, requirements, context);
  }

  /** Signs and broadcasts in nonce order; waits for the receipt outside that order. */
  private async sendRelay(relay: ShieldedRelay): Promise<TransactionReceipt> {
    const { wallet, deployment } = this.options;
    const provider = wallet.provider!;
    const entrypoint = IEntrypoint__factory.connect(deployment.entrypoint, wallet);
    const signed = this.inNonceOrder(async () => {
      let raw: string;
      try {
        const request = await entrypoint.relay.populateTransaction(relay.withdrawal, relay.proof, relay.scope, relay.stateTreeSize);
        raw = await wallet.signTransaction(
          await wallet.populateTransaction({
            ...request,
            // The fee pays for the relay at this price at most: the facilitator never pays more gas than it is paid.
            ...cappedFeeFields(relay, await provider.getFeeData()),
            nonce: await provider.getTransactionCount(wallet.address, "pending"),
          }),
        );
      } catch (error) {
        throw new RelayNotSent((error as Error).message, { cause: error });
      }
      // From here on it may be mined whatever happens: not "not sent".
      return provider.broadcastTransaction(raw).then(() => Transaction.from(raw).hash!);
    });
    const hash = await signed;
    const receipt = await receiptOf(provider, hash, this.options.inclusionTimeoutMs ?? 30_000).catch((error: unknown) => {
      // Sent and not seen mined: it may still be mined.
      this.metrics?.uncertain.inc();
      throw error;
    });
    if (receipt.status !== 1) throw new RelayReverted(hash);
    return receipt;
  }

  private inNonceOrder<T>(send: () => Promise<T>): Promise<T> {
    const sent = this.sending.then(send, send);
    this.sending = sent.catch(() => undefined);
    return sent;
  }
}

/**
 * The receipt of `hash` once mined, asked for every RECEIPT_POLL_MS (a quiet chain mines no block to wake a
 * subscription); RelayPending when none came within `timeoutMs`, or the RPC kept failing that long.
 */
async function receiptOf(provider: Provider, hash: string, timeoutMs: number): Promise<TransactionReceipt> {
  for (const until = Date.now() + timeoutMs; Date.now() < until; ) {
    const receipt = await provider.getTransactionReceipt(hash).catch(() => null);
    if (receipt !== null) return receipt;
    await new Promise((resolve) => setTimeout(resolve, RECEIPT_POLL_MS));
  }
  throw new RelayPending(hash);
}
