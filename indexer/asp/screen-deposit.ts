import path from "node:path";
import type { AspDecision, DepositRecord, SpentNullifierRecord } from "../store/indexer-store.js";
import type { ScreeningLists } from "./screening-lists.js";

/** The curator's decision on one deposit: excluded when a screening list names its depositor, approved otherwise. */
export function screenDeposit(
  deposit: Pick<DepositRecord, "label" | "depositor">,
  lists: ScreeningLists,
  decidedAt: Date,
): AspDecision {
  const common = {
    label: deposit.label,
    depositor: deposit.depositor,
    listsDigest: lists.digest,
    decidedAt: decidedAt.toISOString(),
  };
  const match = lists.match(deposit.depositor);
  if (match === null) {
    return { ...common, approved: true, list: null, reason: "depositor is on no screening list" };
  }
  const where = `${path.basename(match.file)} line ${match.line}`;
  return {
    ...common,
    approved: false,
    list: match.list,
    reason: `depositor is on the ${match.list} list (${where}${match.note === null ? "" : `: ${match.note}`})`,
  };
}

/**
 * The curator's decision on a refund deposit (Entrypoint.depositRefund), made from its origin and never from the
 * screening lists: approved at once when the origin note was spent by a withdrawal, whose proof showed its label
 * in an ASP root the entrypoint accepted, of at least the refunded value; excluded otherwise.
 */
export function screenRefund(
  deposit: Pick<DepositRecord, "label" | "depositor" | "value">,
  originNullifierHash: bigint,
  originSpend: Pick<SpentNullifierRecord, "kind" | "value"> | null,
  listsDigest: string,
  decidedAt: Date,
): AspDecision {
  const common = { label: deposit.label, depositor: deposit.depositor, list: null, listsDigest, decidedAt: decidedAt.toISOString() };
  const refused = (why: string): AspDecision => ({ ...common, approved: false, reason: `refund whose origin nullifier hash ${originNullifierHash} ${why}` });
  if (originSpend?.kind !== "withdrawal") return refused("was not spent by a withdrawal");
  if (deposit.value > originSpend.value) return refused(`withdrew ${originSpend.value}, less than the refunded ${deposit.value}`);
  return { ...common, approved: true, reason: `refund of the note with nullifier hash ${originNullifierHash}, spent by an approved withdrawal` };
}
