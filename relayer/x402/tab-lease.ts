import type { ChannelConfig, TabDeposit } from "../../sdk/x402/batch-settlement.js";

/**
 * What an open-tab lease keeps as its payer's payment (SignedPayment.xPayment, base64 JSON): the channel the deposit
 * funds, its terms, and the deposit the payer authorized. A retry is answered the deposit; the payer sweep reads the
 * channel, and takes back a tab nobody drains through its terms (tab-withdrawal.ts).
 */
export interface TabLeasePayment {
  kind: "tab";
  channelId: string;
  /** Absent on leases made before leases kept it: such a tab is never withdrawn by the sweep. */
  channelConfig?: ChannelConfig;
  deposit: TabDeposit;
}

export function encodeTabLeasePayment(payment: Omit<TabLeasePayment, "kind">): string {
  return Buffer.from(JSON.stringify({ kind: "tab", ...payment })).toString("base64");
}

/** The tab a lease's payment funded; undefined for a settle-x402 lease, whose payment is an x402 payment header. */
export function tabLeasePaymentOf(xPayment: string): TabLeasePayment | undefined {
  const decoded = JSON.parse(Buffer.from(xPayment, "base64").toString("utf8")) as Partial<TabLeasePayment>;
  return decoded.kind === "tab" ? (decoded as TabLeasePayment) : undefined;
}
