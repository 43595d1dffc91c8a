import { toBeHex } from "ethers";
import type { SellerPayment } from "../circuit/context.js";
import type { FacilitatorClient } from "../client/facilitator-client.js";
import { nullifierHashOf, type Note } from "../note/note.js";
import { scopeOf } from "../note/scope.js";
import type { EngineName, ProofEngine } from "../prover/local-prover.js";
import { sellerPaymentContext, sellerPaymentFor, type ShieldedPayload, type ShieldedRequirement } from "../x402/index.js";
import type { ChainRootsReader, RootsSource } from "./chain-roots.js";
import { inTurn, proveNoteSpend, receiveTrees, treesAfter, treesHoldingNote } from "./local-proof.js";
import type { AgentTrees } from "./tree-file.js";

/** The pool the agent's notes are in, as its facilitator's `supported` names it. */
export interface AgentPool {
  chainId: number;
  entrypoint: string;
  privacyPool: string;
  asset: string;
}

/** A seller's price paid by the agent's own proof, ready to go in the payment: nothing has moved yet. */
export interface ShieldedProof {
  payload: ShieldedPayload;
  payment: SellerPayment;
  /** What leaves the note: the price and the facilitator's fee. */
  withdrawnValue: bigint;
  /** The change note the spend makes once relayed; known to the agent alone. */
  change: Note;
  proofTimeMs: number;
  engine: EngineName;
  /** Where the roots the proof is made against were checked. */
  roots: RootsSource;
}

/**
 * Proves the payment of `requirement` out of `note` (docs/sdk.md, "Shielded proof"): a withdrawal of the price plus
 * the entry's fee whose context binds the seller's payTo, price, fee recipient, fee, reference and the window the agent
 * gives it (`windowSeconds` from now, at most the entry's maxTimeoutSeconds), against the newest trees the facilitator serves
 * that hold the note (treesHoldingNote: no older than the chain shows the agent's own RPC, when it has one). The agent never
 * asks for its own path; the change secrets never leave it. Nothing moves until the seller's facilitator relays it.
 */
export async function proveShieldedPayment(options: {
  facilitator: FacilitatorClient;
  prover: ProofEngine;
  note: Note;
  requirement: ShieldedRequirement;
  pool: AgentPool;
  trees: AgentTrees;
  nowSeconds: number;
  /** The most the payment may stay relayable (the agent's bound); the entry's maxTimeoutSeconds when shorter. */
  windowSeconds?: number;
  /** The agent's own RPC (X402AgentOptions.ownRpc): the served trees must be at least as new as the chain's roots. */
  chain?: ChainRootsReader;
}): Promise<ShieldedProof> {
  const { facilitator, prover, note, requirement, pool, trees } = options;
  const fee = BigInt(requirement.extra.fee);
  const withdrawnValue = BigInt(requirement.amount) + fee;
  const windowSeconds = Math.min(options.windowSeconds ?? requirement.maxTimeoutSeconds, requirement.maxTimeoutSeconds);
  const payment = sellerPaymentFor(requirement, fee, BigInt(options.nowSeconds + windowSeconds));
  const context = sellerPaymentContext(payment, pool.entrypoint, scopeOf(pool.privacyPool, BigInt(pool.chainId), pool.asset));
  const { served, stateWitness, aspWitness, roots } = await treesHoldingNote({ facilitator, trees, note, chain: options.chain });
  // A seller payment is never refunded, but its proof binds a refund precommitment as every spend's does.
  const { proof, publicSignals, proofTimeMs, engine, change } = await proveNoteSpend(prover, note, { withdrawnValue, stateWitness, aspWitness, context, relayFeeBPS: 0n });
  return {
    payload: {
      proof: { pi_a: proof.pi_a, pi_b: proof.pi_b, pi_c: proof.pi_c, protocol: "groth16", curve: "bn128" },
      publicSignals,
      stateTreeSize: String(served.state.size),
      validBefore: payment.validBefore.toString(),
      nullifiers: [toBeHex(nullifierHashOf(note.nullifier), 32)],
    },
    payment,
    withdrawnValue,
    change,
    proofTimeMs,
    engine,
    roots,
  };
}

/**
 * Whether `change`, the change note a payment would make, is a leaf of the state tree its facilitator serves now: the
 * payment was relayed (the note was spent by it, and no other spend makes that change note).
 */
export async function changeLanded(facilitator: FacilitatorClient, trees: AgentTrees, change: Note): Promise<boolean> {
  return inTurn(trees, async () => {
    const served = await treesAfter(facilitator, { state: trees.state.fetched, asp: trees.asp.fetched });
    receiveTrees(trees, served);
    const tree = await trees.state.treeOf(served.state.size);
    return tree !== undefined && tree.leaves.includes(change.commitment);
  });
}
