import type { Note } from "../note/note.js";

/** What a payment asks of the wallet: a note that holds `atLeast`, none of those it already tried. */
export interface NoteRequest {
  /** Atomic USDC the note must hold at least: what the payment takes out of it. */
  atLeast: bigint;
  /** Commitments of notes this payment tried already (the facilitator found one too small): never chosen again. */
  skip?: ReadonlySet<bigint>;
}

/**
 * One note held by one payment, from its choice to its end. No other payment is given the note meanwhile. The
 * payment calls `sending` before the request that can spend the note leaves (from then on a crash leaves the note
 * to NoteVault.reconcile, which asks the chain), then ends the reservation with exactly one of `spent`,
 * `spentInto`, `released` or `unsettled`.
 */
export interface NoteReservation {
  readonly note: Note;
  /**
   * The request that can spend the note is about to leave (a settle, a proof handed to a relayer). Recorded on disk,
   * with `hold` when the spend can land until a known time (a shielded-proof payment's window): after a crash,
   * NoteVault.reconcile frees the note no earlier, and the payment kept with it is presented again (NoteStore.resume).
   */
  sending(hold?: SendingHold): Promise<void>;
  /** The note was spent: `change`, when it holds value, joins the wallet free for any payment. */
  spent(change?: Note): Promise<void>;
  /**
   * The note was spent and `change` pays on for this same payment (an access fee paid out of the note): marks the
   * note spent and returns the change note's reservation, held by the same payment.
   */
  spentInto(change: Note): Promise<NoteReservation>;
  /** Nothing was spent: the note is free again. */
  released(): Promise<void>;
  /**
   * The spend's outcome is unknown (SETTLEMENT_UNCERTAIN, or a facilitator that says the note is spent): the note
   * stays reserved, and no payment is given it, until NoteVault.reconcile reads the chain.
   */
  unsettled(): Promise<void>;
}

/** How long a sent spend can land, and the payment to present again for it after a crash. */
export interface SendingHold {
  /** Ms since the epoch: until then the spend can land (a shielded-proof payment's validBefore). */
  untilMs: number;
  presentation?: StoredPresentation;
}

/** A shielded-proof payment as sent to a seller, kept to be presented again for the same request. */
export interface StoredPresentation {
  /** The request it pays: method and URL. */
  request: string;
  /** The payment's headers (X-PAYMENT, PAYMENT-SIGNATURE): a proof and public signals, no note secret. */
  headers: Record<string, string>;
  /** What it takes out of the note: the price and the fee (its change note follows from it). */
  withdrawnValue: bigint;
}

/** Where an agent's payments take their notes from; NoteVault is one. */
export interface NoteStore {
  /**
   * Reserves the smallest free note that holds `request.atLeast`. When every such note is held by payments of this
   * process in flight, waits for one of them to end (its change note or the note itself may serve); undefined when
   * no note can.
   */
  reserve(request: NoteRequest): Promise<NoteReservation | undefined>;
  /**
   * The note whose payment for `request` was sent and not answered before the process ended, held again by the
   * caller with the payment to present again; undefined when there is none, or when it can no longer land.
   */
  resume?(request: string): Promise<{ reservation: NoteReservation; presentation: StoredPresentation; holdUntilMs: number } | undefined>;
}
