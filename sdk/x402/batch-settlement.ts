// A private tab's wire facts (docs/design.md 13, docs/x402-interop.md "Private tab"), shared by the relayer, which
// quotes and opens tabs, and the agent, which checks the quote and builds the tab's deposit payment.
import { ERC3009_DEPOSIT_COLLECTOR_ADDRESS } from "@x402/evm";
import { buildChannelConfig, computeChannelId } from "@x402/evm/batch-settlement/client";
import type { ChannelConfig } from "@x402/evm";
import type { PaymentRequirements } from "@x402/core/types";
import { AbiCoder, isAddress, keccak256, ZeroAddress } from "ethers";
import { z } from "zod";
import { eip3009Types } from "./eip712-domain.js";
import { chainIdOfNetwork } from "./networks.js";

export type { ChannelConfig };

/** x402BatchSettlement's bounds of a channel's withdrawDelay, in seconds (15 minutes to 30 days). */
export const WITHDRAW_DELAY_SECONDS = { minimum: 900, maximum: 2_592_000 } as const;

const EvmAddressSchema = z.string().refine((s) => /^0x[0-9a-fA-F]{40}$/.test(s) && isAddress(s), { message: "must be a 0x-prefixed 20-byte address" });

/**
 * A seller's v2 `batch-settlement` entry: what one request costs (`amount`), the channel's receiver (`payTo`), its
 * authorizer and withdrawal delay (`extra`), and the token's EIP-712 domain, which the deposit authorization is signed
 * under (read loosely here, so that an entry naming none gets the shared rule's answer). Kept as sent: the deposit
 * payment echoes it.
 */
export const BatchSettlementRequirementSchema = z.looseObject({
  scheme: z.literal("batch-settlement"),
  network: z.string().refine((network) => chainIdOfNetwork(network) !== undefined, { message: "must be a CAIP-2 EVM network id such as eip155:84532" }),
  asset: EvmAddressSchema,
  payTo: EvmAddressSchema,
  amount: z.string().regex(/^[1-9][0-9]{0,37}$/, "must be a positive atomic amount as a canonical integer string"),
  maxTimeoutSeconds: z.number().int().positive().optional(),
  extra: z.looseObject({
    receiverAuthorizer: EvmAddressSchema.refine((address) => address.toLowerCase() !== ZeroAddress, {
      message: "must not be the zero address: the channel's claims and refunds could never be authorized",
    }),
    withdrawDelay: z.number().int().min(WITHDRAW_DELAY_SECONDS.minimum).max(WITHDRAW_DELAY_SECONDS.maximum).optional(),
  }),
});
export type BatchSettlementRequirement = z.infer<typeof BatchSettlementRequirementSchema>;

/** The channel of a tab: the seller's entry, the single-use payer, the tab's voucher key and the agent's salt. */
export interface TabChannelTerms {
  accepted: BatchSettlementRequirement;
  payer: string;
  /** The address of the key made for the tab, which signs its vouchers. */
  payerAuthorizer: string;
  salt: string;
}

/** The ChannelConfig @x402/evm's client builds for these terms, and its chain-bound id. */
export function tabChannelOf({ accepted, payer, payerAuthorizer, salt }: TabChannelTerms): { channelConfig: ChannelConfig; channelId: `0x${string}` } {
  // buildChannelConfig reads only the signer's address and the payerAuthorizer given; storage is not touched.
  const deps = { signer: { address: payer }, payerAuthorizer, salt } as unknown as Parameters<typeof buildChannelConfig>[0];
  const channelConfig = buildChannelConfig(deps, accepted as unknown as PaymentRequirements);
  return { channelConfig, channelId: computeChannelId(channelConfig, accepted.network) };
}

/**
 * The ERC-3009 nonce of the deposit into `channelId` that names `depositSalt`, as the deposit collector checks it:
 * keccak256(abi.encode(channelId, uint256(depositSalt))). A tab's relay names it as its payment nonce, so the
 * withdrawal proof binds the channel, and the payer's one authorization can fund that channel only.
 */
export function tabDepositNonceOf(channelId: string, depositSalt: string): string {
  return keccak256(AbiCoder.defaultAbiCoder().encode(["bytes32", "uint256"], [channelId, BigInt(depositSalt)]));
}

/** The payer's ReceiveWithAuthorization of a tab's deposit, to x402's ERC-3009 deposit collector. */
export function tabDepositAuthorization({ payer, value, validBefore, nonce }: { payer: string; value: bigint; validBefore: bigint; nonce: string }) {
  return {
    types: eip3009Types("ReceiveWithAuthorization"),
    message: { from: payer, to: ERC3009_DEPOSIT_COLLECTOR_ADDRESS, value, validAfter: 0n, validBefore, nonce },
  };
}

/** The deposit half of a tab's first payment (`payload.deposit` of @x402/evm's deposit payload). */
export interface TabDeposit {
  amount: string;
  authorization: { erc3009Authorization: { validAfter: string; validBefore: string; salt: string; signature: string } };
}
