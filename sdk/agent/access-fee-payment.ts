import { FacilitatorError, type AccessFeeProofAnswer, type SupportedAnswer } from "../client/facilitator-client.js";
import { deriveChangeSecrets, nullifierHashOf, type Note } from "../note/note.js";
import { DEFAULT_MAX_ACCESS_FEE_ATOMIC, type AgentEvent, type X402AgentOptions } from "./agent-options.js";
import { X402AgentError } from "./errors.js";
import type { QuoteExpectation } from "./local-proof.js";
import type { NoteReservation } from "./note-reservation.js";
import { proofsRelayedThrough } from "./relayed-proofs.js";

/** What paying an access fee needs of the agent's wallet (AgentWallet). */
export interface AccessFeeWallet {
  readonly options: Pick<X402AgentOptions, "facilitator" | "maxAccessFeeAtomic">;
  terms(): Promise<{ supported: SupportedAnswer }>;
  reserve(gross: bigint): () => void;
  proveSpend(note: Note, expected: QuoteExpectation, fields: Record<string, unknown>): Promise<{ body: Record<string, unknown>; change?: Note }>;
  untilSettled<T>(settle: () => Promise<T>): Promise<T>;
  emit(event: AgentEvent): void;
}

/** The access fee a facilitator asked for in a 402 NULLIFIER_NOT_AUTHORIZED (docs/api.md 2.6). */
export interface AccessFeeAsked {
  fee: bigint;
  /** What paying it out of the note withdraws: the fee and, on a paid network, its relay's gas (the fee alone when unnamed). */
  withdrawal: bigint;
  treasury: string;
}

/** The access fee a 402 NULLIFIER_NOT_AUTHORIZED asks for, from its `authorization` block; undefined for any other error. */
export function accessFeeAskedBy(error: unknown): AccessFeeAsked | undefined {
  if (!(error instanceof FacilitatorError) || error.code !== "NULLIFIER_NOT_AUTHORIZED") return undefined;
  const { requiredFeeAtomic, noteWithdrawalAtomic = requiredFeeAtomic, treasury } = (error.body.authorization ?? {}) as Record<string, unknown>;
  const atomic = (value: unknown): value is string => typeof value === "string" && /^[0-9]+$/.test(value);
  if (!atomic(requiredFeeAtomic) || !atomic(noteWithdrawalAtomic) || typeof treasury !== "string") return undefined;
  const [fee, withdrawal] = [BigInt(requiredFeeAtomic), BigInt(noteWithdrawalAtomic)];
  return withdrawal < fee ? undefined : { fee, withdrawal, treasury };
}

/**
 * Pays the access fee the facilitator asked for out of the held note itself (docs/sdk.md "Access fees"): the agent
 * proves a withdrawal of the fee to the treasury whose AccessFeePaid names its change note, and the facilitator
 * relays it, so that no wallet appears with the note. Whatever the custody, the agent proves it: the facilitator
 * learns no secret. Ends the note's reservation: the note is marked spent and its change note, now authorized,
 * returned reserved for this payment when it still holds `gross`; otherwise the change joins the notes and the
 * answer is undefined.
 */
export async function payAccessFee(wallet: AccessFeeWallet, held: NoteReservation, asked: AccessFeeAsked, gross: bigint): Promise<NoteReservation | undefined> {
  const { facilitator } = wallet.options;
  const { note } = held;
  const refuse = async (message: string): Promise<never> => {
    await held.released();
    throw new X402AgentError("ACCESS_FEE_REFUSED", message);
  };
  const maximum = wallet.options.maxAccessFeeAtomic ?? DEFAULT_MAX_ACCESS_FEE_ATOMIC;
  if (asked.withdrawal > maximum) {
    return refuse(
      `${facilitator.url} asks an access fee of ${asked.fee} atomic USDC for the note, ${asked.withdrawal} out of the note with its relay's gas, above maxAccessFeeAtomic ${maximum}; nothing was paid. Raise maxAccessFeeAtomic to pay it out of the note.`,
    );
  }
  const relaysProofsThrough = await proofsRelayedThrough((await wallet.terms()).supported);
  if (relaysProofsThrough === undefined) {
    return refuse(`${facilitator.url} asks an access fee but relays no proofs of this SDK's circuit, so the note cannot pay it; nothing was paid.`);
  }
  const releaseFee = wallet.reserve(asked.withdrawal);
  const authorizedNullifierHash = nullifierHashOf(deriveChangeSecrets(note).nullifier);
  const expected = { route: "access-fee", withdrawnValue: asked.withdrawal, feeBps: 0n, processooor: relaysProofsThrough, recipient: asked.treasury, authorizedNullifierHash } as const;
  // Named only when it is more than the fee: a facilitator that asks the fee alone may know no such field.
  const withdrawal = asked.withdrawal === asked.fee ? {} : { withdrawnValue: asked.withdrawal.toString() };
  let answer: AccessFeeProofAnswer;
  let change: Note | undefined;
  try {
    const proven = await wallet.proveSpend(note, expected, { authorizedNullifierHash: authorizedNullifierHash.toString(), ...withdrawal });
    change = proven.change;
    await held.sending();
    answer = await wallet.untilSettled(() => facilitator.accessFeeProof(proven.body));
  } catch (error) {
    const uncertain = error instanceof X402AgentError && error.code === "SETTLEMENT_UNCERTAIN";
    if (!uncertain) releaseFee();
    await (uncertain ? held.unsettled() : held.released());
    throw error;
  }
  wallet.emit({ step: "access-fee-paid", answer });
  if (change === undefined || change.value < gross) {
    await held.spent(change);
    return undefined;
  }
  return held.spentInto(change);
}
