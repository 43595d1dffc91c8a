// A private tab's wire facts (docs/design.md 13, docs/x402-interop.md "Private tab"), shared by the relayer, which
// quotes and opens tabs, and the agent, which checks the quote against the channel it asked for.
import { buildChannelConfig, computeChannelId } from "@x402/evm/batch-settlement/client";
import type { ChannelConfig } from "@x402/evm";
import type { PaymentRequirements } from "@x402/core/types";
import { isAddress, ZeroAddress } from "ethers";
import { z } from "zod";
import { chainIdOfNetwork } from "./networks.js";

export type { ChannelConfig };

/**
 * The bounds of a private tab's channel withdrawDelay, in seconds: x402BatchSettlement's 15 minutes, and the
 * entrypoint's MAX_TAB_WITHDRAW_DELAY of 7 days (x402 allows 30), so that a tab nobody drains is back at most that
 * long after its lifetime.
 */
export const WITHDRAW_DELAY_SECONDS = { minimum: 900, maximum: 604_800 } as const;

const EvmAddressSchema = z.string().refine((s) => /^0x[0-9a-fA-F]{40}$/.test(s) && isAddress(s), { message: "must be a 0x-prefixed 20-byte address" });

/**
 * A seller's v2 `batch-settlement` entry: what one request costs (`amount`), the channel's receiver (`payTo`), its
 * authorizer and withdrawal delay (`extra`, at most the entrypoint's 7 days), and the token's EIP-712 domain (read
 * loosely here, so that an entry naming none gets the shared rule's answer). Kept as sent: every voucher payment echoes it.
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

/** The channel of a tab: the seller's entry, the tab's payer (Entrypoint.tabPayerOf), its voucher key and the agent's salt. */
export interface TabChannelTerms {
  accepted: BatchSettlementRequirement;
  /** The note's TabPayer: the entrypoint's clone that the channel gives back to, and nobody else. */
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
