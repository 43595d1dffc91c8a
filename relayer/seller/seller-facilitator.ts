import { x402Facilitator } from "@x402/core/facilitator";
import type { FacilitatorEvmSigner } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import type { IndexerClient } from "../../indexer/client.js";
import {
  cappedFeeFields,
  RelayNotSent,
  RelayPending,
  RelayReverted,
  ShieldedPayments,
  ShieldedPaymentsScheme,
  spendingTransaction,
  type SellerPaymentMetrics,
} from "../../seller/index.js";
import { RelayRevertedError, type PoolChain } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";
import type { RelayerStore } from "../store/relayer-store.js";

export interface SellerFacilitatorDeps {
  chain: PoolChain;
  indexer: Pick<IndexerClient, "nullifier">;
  store: RelayerStore;
  /** Where the relay fees accrue (the treasury). */
  feeRecipient: string;
  /** The least fee a seller's entry may name (RELAYER_SELLER_FEE_ATOMIC). */
  minimumFee: bigint;
  usdcPerEth: bigint;
  /** Counts the relays sent and not seen mined. */
  metrics: Pick<SellerPaymentMetrics, "uncertain">;
}

/**
 * The relayer as a seller's x402 facilitator for shielded-proof payments (docs/api.md 4.9): the seller names
 * `<relayer>/api/seller` as its facilitator URL, and its server calls supported, verify and settle here. The checks
 * and the reading of outcomes are the plug-in's (seller/shielded-payments.ts); the relay goes through the relayer's
 * own queue (batched with its other relays, in its nonce order), its claims into the relayer's database, so that
 * every relayer sharing it answers a payment's settle once.
 */
export function sellerFacilitator({ chain, indexer, store, feeRecipient, minimumFee, usdcPerEth, metrics }: SellerFacilitatorDeps): ShieldedPayments {
  return new ShieldedPayments({
    deployment: chain.deployment,
    entrypoint: chain.entrypoint,
    pool: chain.pool,
    settler: chain.relayer.address,
    feeRecipient,
    minimumFee,
    usdcPerEth,
    gasPrice: async () => {
      const fees = await chain.call(() => chain.provider.getFeeData());
      const price = fees.maxFeePerGas ?? fees.gasPrice;
      if (price === null) throw new RelayerError("CHAIN_UNAVAILABLE", "The chain RPC did not answer a gas price; nothing was spent. Retry later.");
      return price;
    },
    claims: {
      claim: (nullifierHash, leaseSeconds) => store.claimSellerPayment(nullifierHash, leaseSeconds),
      release: (nullifierHash) => store.releaseSellerPayment(nullifierHash),
    },
    sendRelay: (relay) =>
      chain.relayCapped(relay.withdrawal, relay.proof, relay.stateTreeSize, (fees) => cappedFeeFields(relay, fees)).catch((error: unknown) => {
        const pending = error instanceof RelayerError && error.code === "SETTLEMENT_UNCERTAIN" ? error.extra.fundingTxHash : undefined;
        if (error instanceof RelayerError && error.code === "SETTLEMENT_UNCERTAIN") metrics.uncertain.inc();
        if (typeof pending === "string") throw new RelayPending(pending);
        if (error instanceof RelayRevertedError) throw new RelayReverted(error.txHash);
        // The relay is simulated before it is signed: a refusal there sent nothing.
        const sent = !(error instanceof RelayerError) || error.code === "SETTLEMENT_UNCERTAIN";
        throw sent ? error : new RelayNotSent(error.message, { cause: error });
      }),
    // The indexer knows every spend it has read; one mined a moment ago is found in the pool's recent events.
    findSpend: async (nullifierHash) =>
      (await indexer.nullifier(nullifierHash).catch(() => undefined))?.spend?.txHash ?? (await chain.call(() => spendingTransaction(chain.pool, nullifierHash))),
  });
}

export interface SellerX402FacilitatorParts {
  payments: ShieldedPayments;
  /** The relaying key: it sends the shielded-proof relays. */
  relayer: string;
  /** Settles plain `exact` (EIP-3009) payments (RELAYER_SELLER_EIP3009_KEY); without it they are refused. */
  eip3009Signer?: FacilitatorEvmSigner;
  metrics: SellerPaymentMetrics;
}

/**
 * The seller routes' x402 facilitator: @x402/core's, with one `exact` scheme on the relayer's network that relays
 * shielded-proof payments and hands plain ones to @x402/evm's reference `exact` scheme, which settles them from its
 * own key. `supported` is the facilitator's: one `exact` kind, the shielded-proof terms in its extra, both signers.
 */
export function sellerX402Facilitator({ payments, relayer, eip3009Signer, metrics }: SellerX402FacilitatorParts): x402Facilitator {
  const inner = eip3009Signer === undefined ? undefined : new ExactEvmScheme(eip3009Signer);
  return new x402Facilitator().register(payments.network, new ShieldedPaymentsScheme({ payments, settler: relayer, inner, metrics }));
}
