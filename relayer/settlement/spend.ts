import {
  changeNoteOf,
  encodeAccessFeeData,
  encodePoolAuthorization,
  encodeRelayData,
  encodeTabOpening,
  namePublicSignals,
  nullifierHashOf,
  refundAnchorOf,
  refundPrecommitmentOf,
  type Note,
  type NoteSecrets,
  type TabChannelConfig,
  type Withdrawal,
  type WithdrawProof,
} from "../../sdk/index.js";
import type { PoolTransfer } from "../../sdk/x402/index.js";
import type { PoolDeployment } from "../chain/pool-chain.js";

/** A spend the relayer proves: the agent sent the note and the change note's secrets (custodial, docs/design.md 10). */
export interface NoteSpend {
  kind: "note";
  note: Note;
  changeSecrets: NoteSecrets;
}

/** A spend the agent proved: the relayer holds the proof and never sees the note (non-custodial, docs/design.md 10). */
export interface ProvenSpend {
  kind: "proof";
  proof: WithdrawProof;
  nullifierHash: bigint;
  /** The change note's commitment, a public signal: the only thing the relayer knows of the change note. */
  newCommitment: bigint;
  /** The size of the state tree whose root the proof uses (the quote's): the relay names it. */
  stateTreeSize: bigint;
}

export type Spend = NoteSpend | ProvenSpend;

/** What a lease records of a spend of `amount`: the note it spends, the change commitment, and what is left when known. */
export function spendRecord(spend: Spend, amount: bigint): { nullifierHash: bigint; changeCommitment: bigint; remainingValue: bigint | null } {
  if (spend.kind === "proof") return { nullifierHash: spend.nullifierHash, changeCommitment: spend.newCommitment, remainingValue: null };
  const change = changeNoteOf(spend.note, amount, spend.changeSecrets);
  return { nullifierHash: nullifierHashOf(spend.note.nullifier), changeCommitment: change.commitment, remainingValue: change.value };
}

/**
 * The refund anchor the spend's proof reveals (docs/design.md 3): the note's label under the refund precommitment,
 * from which the pool makes the refund note of whatever comes back. The agent's proof names it; when the relayer
 * proves, it uses the precommitment the SDK derives from the note (refundPrecommitmentOf).
 */
export function refundAnchorOfSpend(spend: Spend): bigint {
  if (spend.kind === "proof") return namePublicSignals(spend.proof.publicSignals).refundAnchor;
  return refundAnchorOf(spend.note.label, refundPrecommitmentOf(spend.note));
}

/** Whom a relay pays and what it takes: the RelayData (or, for an access fee, the AccessFeeData) a proof's context binds. */
export interface RelayTerms {
  recipient: string;
  feeRecipient: string;
  feeBps: bigint;
  /**
   * open-tab: the tab the relay opens (Entrypoint's TabOpening): it deposits the payout into `channel`, whose payer is
   * the note's TabPayer (the recipient), and from `reclaimableAfter` anyone may take back what its seller left.
   */
  tab?: TabOpeningTerms;
  /**
   * settle-x402: the pool pays the recipient itself, by the one EIP-3009 transfer the relay authorizes (Entrypoint's
   * PoolAuthorization; its payTo is the recipient): the payout stays in the pool until the seller takes it.
   */
  poolTransfer?: PoolTransfer;
  /**
   * An access fee paid out of the note (Entrypoint.relayAccessFee): the nullifier hash the fee authorizes. The whole
   * withdrawn value goes to the recipient, the treasury; feeBps is 0 and feeRecipient unused.
   */
  authorizedNullifierHash?: bigint;
}

/** A private tab's channel and lifetime, as a TabOpening names them; `channelId` is the channel's id on this chain. */
export interface TabOpeningTerms {
  channel: TabChannelConfig;
  channelId: string;
  reclaimableAfter: bigint;
}

/** The withdrawal of `terms` (Entrypoint.relay's, or relayAccessFee's), processed by the deployment's entrypoint. */
export function withdrawalOf(deployment: PoolDeployment, terms: RelayTerms): Withdrawal {
  return { processooor: deployment.entrypoint, data: withdrawalDataOf(terms) };
}

function withdrawalDataOf({ recipient, feeRecipient, feeBps, tab, poolTransfer, authorizedNullifierHash }: RelayTerms): string {
  if (authorizedNullifierHash !== undefined) return encodeAccessFeeData({ treasury: recipient, nullifierHash: authorizedNullifierHash });
  if (poolTransfer !== undefined) return encodePoolAuthorization({ ...poolTransfer, payTo: recipient, feeRecipient, relayFeeBPS: feeBps });
  if (tab !== undefined) return encodeTabOpening({ channel: tab.channel, reclaimableAfter: tab.reclaimableAfter, feeRecipient, relayFeeBPS: feeBps });
  return encodeRelayData({ recipient, feeRecipient, relayFeeBPS: feeBps });
}
