import type { ChannelConfig } from "../../sdk/x402/batch-settlement.js";

/**
 * What an open-tab lease keeps as its payment (SignedPayment.xPayment, base64 JSON): the channel the relay deposited
 * into and the tab's lifetime, the TabOpening its relay named. The relay is recognized by what it recorded, and the
 * payer sweep returns what the channel gave back (tab-withdrawal.ts) from it.
 */
export interface TabLeasePayment {
  kind: "tab";
  channelId: string;
  channelConfig: ChannelConfig;
  /** The TabOpening's reclaimableAfter (unix seconds). */
  reclaimableAfter: number;
}

export function encodeTabLeasePayment(payment: Omit<TabLeasePayment, "kind">): string {
  return Buffer.from(JSON.stringify({ kind: "tab", ...payment })).toString("base64");
}

/** The tab a lease's relay opened; undefined for a settle-x402 lease, whose payment is an x402 payment header. */
export function tabLeasePaymentOf(xPayment: string): TabLeasePayment | undefined {
  const decoded = JSON.parse(Buffer.from(xPayment, "base64").toString("utf8")) as Partial<TabLeasePayment>;
  return decoded.kind === "tab" ? (decoded as TabLeasePayment) : undefined;
}
