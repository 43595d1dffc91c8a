import path from "node:path";
import type { AspDecision, AspVerdict, DepositRecord } from "../store/indexer-store.js";
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

/** Whether screening `depositor` against `lists` now gives `verdict` again: the same approval and flagging list. */
export function sameVerdict(verdict: AspVerdict, depositor: string, lists: ScreeningLists): boolean {
  const list = lists.match(depositor)?.list ?? null;
  return verdict.list === list && verdict.approved === (list === null);
}
