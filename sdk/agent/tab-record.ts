import { z } from "zod";
import { Bytes32Schema } from "../schema/primitives.js";
import type { BatchSettlementRequirement } from "../x402/batch-settlement.js";

const atomic = z.string().regex(/^[0-9]+$/);

/**
 * A private tab as the agent keeps it (docs/sdk.md, "Private tab"): the key made for it, which signs its vouchers and
 * is a secret (it spends the tab), and the channel once the facilitator opened it. Kept in the agent's encrypted
 * NoteVault, never in clear; the channel's running totals are @x402/evm's, in its own channel storage.
 */
export const StoredTabSchema = z
  .object({
    /** Which seller's channel it is (tabSellerOf). */
    seller: z.string(),
    /** The tab's voucher key (the channel's payerAuthorizer). */
    tabKey: Bytes32Schema,
    /** The channel's salt. */
    salt: Bytes32Schema,
    /** When the agent made the tab (ms since the epoch): it pays with it for the tab's lifetime from then. */
    createdAt: z.number().int().nonnegative(),
    /**
     * Set once open-tab answered: the tab's payer (the note's TabPayer), the channel, what the relay deposited into
     * it, and when anyone may take back what the seller leaves (unix seconds).
     */
    opened: z.object({ payer: z.string(), channelId: Bytes32Schema, depositAmount: atomic, reclaimableAfter: z.number().int() }).strict().optional(),
    /**
     * A payment sent on the tab whose answer the agent has not recorded (kept before it is sent, cleared by the
     * seller's answer): the running total its voucher signed. Only while it is set may a seller's corrective 402 move
     * the tab to that total (PrivateTabs).
     */
    unanswered: z.object({ maxClaimableAmount: atomic }).strict().optional(),
  })
  .strict();
export type StoredTab = z.infer<typeof StoredTabSchema>;

/** Where an agent keeps its tabs (NoteVault keeps them encrypted with its notes). */
export interface TabStore {
  /** The newest tab kept for `seller`, if any. */
  tab(seller: string): Promise<StoredTab | undefined>;
  /**
   * Keeps `tab`, replacing the one of the same key and any of the same seller that never opened: its relay, if one was
   * made, funded a channel the agent never pays on, whose deposit the sweep returns after its lifetime without the tab's key.
   */
  saveTab(tab: StoredTab): Promise<void>;
}

/**
 * The seller a tab is with: every field of its entry that goes into the channel (the network, the token, the
 * receiver, its authorizer and the withdrawal delay). A tab pays only entries naming the same.
 */
export function tabSellerOf(accepted: BatchSettlementRequirement): string {
  const { network, asset, payTo, extra } = accepted;
  return [network, asset, payTo, extra.receiverAuthorizer, extra.withdrawDelay ?? "default"].map((part) => String(part).toLowerCase()).join("|");
}
