import { z } from "zod";
import { MAX_TREE_DEPTH, PACKED_LEAF_CHARS } from "../sdk/index.js";
import {
  AddressSchema,
  AtomicAmountSchema,
  Bytes32Schema,
  FieldElementSchema,
} from "../sdk/schema/primitives.js";

/** The indexer API's routes (all GET, all behind the bearer token); `:name` marks a path parameter. */
export const INDEXER_ROUTES = {
  status: "/v1/status",
  stateProof: "/v1/state/proofs/:commitment",
  aspProof: "/v1/asp/proofs/:label",
  nullifier: "/v1/nullifiers/:nullifierHash",
  deposit: "/v1/deposits/:label",
  /** The anonymity set of a payment withdrawing `:withdrawnValue` (AnonymitySetSchema). */
  anonymitySet: "/v1/anonymity-sets/:withdrawnValue",
  /** The address book the indexer follows, so a client can check it follows the same deployment. */
  deployment: "/v1/deployment",
  /** Root, depth and size of the state tree and of the on-chain ASP tree. */
  trees: "/v1/trees",
  /**
   * The same with the leaves from `?stateFrom=` and `?aspFrom=` on (default 0, every leaf; from 0 where the optional
   * `?stateFromRoot=`/`?aspFromRoot=` is not the root of the tree's first leaves up to there): public data, from
   * which an agent rebuilds both trees and takes its own paths.
   */
  treeLeaves: "/v1/trees/leaves",
} as const;

/** A route with its parameters filled in. */
export function routePath(route: string, params: Record<string, bigint> = {}): string {
  return route.replace(/:([A-Za-z]+)/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new TypeError(`route ${route} needs parameter ${name}`);
    return value.toString();
  });
}

/*
 * The indexer API's response bodies. The server builds their parsed (output) form, with bigints, and sends it
 * through toWireJson; the client parses the wire form back with the same schemas.
 */

const count = z.number().int().min(0);

/** A Merkle path in the circuit's form; root and siblings as decimal strings on the wire. */
export const MerkleWitnessSchema = z
  .object({
    root: FieldElementSchema,
    depth: count.max(MAX_TREE_DEPTH),
    index: count,
    siblings: z.array(FieldElementSchema).length(MAX_TREE_DEPTH),
  })
  .strict();

export const IndexerStatusSchema = z
  .object({
    chainId: z.number().int().positive(),
    leafCount: count,
    /** Root of the rebuilt state tree, "0" while empty. */
    stateRoot: FieldElementSchema,
    /** Whether it equals the pool's root at lastBlock, as checked after the last batch. */
    stateRootMatches: z.boolean(),
    /** Root of the curator's tree of approved labels, "0" while none is approved. */
    aspRoot: FieldElementSchema,
    /** Whether that root is the entrypoint's latest root. */
    aspRootMatches: z.boolean(),
    aspLabelCount: count,
    /** Distinct independent depositors (docs/design.md section 9). */
    anonymitySet: count,
    /** The last block read, null before the first batch. */
    lastBlock: count.nullable(),
    /** It reads up to the chain head less this many blocks: what it holds is complete up to that block. */
    confirmations: count,
    /** Whether the indexer has caught up with the confirmed head since it started (false: "cold"). */
    synced: z.boolean(),
  })
  .strict();

/** A payment's own anonymity set: the depositors whose deposits under the on-chain ASP root could have funded it. */
export const AnonymitySetSchema = z
  .object({
    withdrawnValue: AtomicAmountSchema,
    anonymitySet: count,
    /** The on-chain ASP root whose approved deposits were counted, "0" while none is published. */
    aspRoot: FieldElementSchema,
  })
  .strict();

/** A tree as a proof binds it: its root and depth, and the leaves it has. */
const TreeSchema = z.object({ root: FieldElementSchema, depth: count.max(MAX_TREE_DEPTH), size: count }).strict();

/** The state tree up to lastBlock and the ASP tree whose root is on chain (the one ASP paths come from). */
export const TreesSchema = z.object({ state: TreeSchema, asp: TreeSchema }).strict();

/**
 * How many leaves of each tree the caller has: the answer holds the leaves after those. With `stateFromRoot`
 * (`aspFromRoot`), the root the caller's first `stateFrom` (`aspFrom`) leaves make: a tree whose first leaves make
 * another root was rebuilt since (an ASP revocation, a reorg), even when it has grown past them, and is answered
 * from 0.
 */
export const TreeLeavesQuerySchema = z.object({
  stateFrom: z.coerce.number().pipe(count).default(0),
  aspFrom: z.coerce.number().pipe(count).default(0),
  stateFromRoot: FieldElementSchema.optional(),
  aspFromRoot: FieldElementSchema.optional(),
});

/**
 * A tree with its leaves from position `from` on (the position asked for, or 0 when the tree has fewer leaves than
 * that or its first leaves make another root than the caller's: it was rebuilt, and the caller must start again), packed: 64 hex characters (32 big-endian bytes) a leaf,
 * one string. The server keeps them packed, so a request prints no leaf, and the relayer passes them on unread.
 */
const TreeWithLeavesSchema = TreeSchema.extend({
  from: count,
  // Whole leaves checked by length: a regular expression of repeated 64-character groups overflows the stack at 100k leaves.
  leaves: z
    .string()
    .regex(/^[0-9a-f]*$/)
    .refine((packed) => packed.length % PACKED_LEAF_CHARS === 0, `must be whole leaves of ${PACKED_LEAF_CHARS} hex characters`)
    .describe(`${PACKED_LEAF_CHARS} lower-case hex characters (32 big-endian bytes) a leaf`),
}).strict();

/** The trees of TreesSchema with their leaves: commitments in leaf order, approved labels in tree order. */
export const TreeLeavesSchema = z.object({ state: TreeWithLeavesSchema, asp: TreeWithLeavesSchema }).strict();

export const StateProofSchema = z
  .object({
    commitment: FieldElementSchema,
    witness: MerkleWitnessSchema,
    /** Leaves of the tree the witness was taken from: what a relay names as the root's stateTreeSize. */
    stateTreeSize: count,
  })
  .strict();

export const AspProofSchema = z.object({ label: FieldElementSchema, witness: MerkleWitnessSchema }).strict();

export const NullifierStatusSchema = z
  .object({
    nullifierHash: FieldElementSchema,
    spent: z.boolean(),
    /** The spending transaction, null while unspent. */
    spend: z
      .object({ kind: z.enum(["withdrawal", "ragequit"]), blockNumber: count, txHash: Bytes32Schema })
      .strict()
      .nullable(),
    /** The answer holds up to this block; later spends are not seen yet. */
    asOfBlock: count.nullable(),
  })
  .strict();

export const AspDecisionSchema = z
  .object({
    approved: z.boolean(),
    list: z.string().nullable(),
    reason: z.string(),
    listsDigest: z.string(),
    decidedAt: z.iso.datetime(),
  })
  .strict();

export const DepositSchema = z
  .object({
    label: FieldElementSchema,
    depositor: AddressSchema,
    commitment: FieldElementSchema,
    value: AtomicAmountSchema,
    precommitment: FieldElementSchema,
    blockNumber: count,
    txHash: Bytes32Schema,
    /** Position of the commitment in the state tree. */
    leafIndex: count,
    /** The depositor took the deposit back. */
    ragequit: z.boolean(),
    /** The ASP audit trail of the label, oldest first; the last entry is in force. */
    aspDecisions: z.array(AspDecisionSchema).min(1),
  })
  .strict();

/** The one error body of the indexer API; `code` is a key of INDEXER_ERROR_STATUS. */
export const ErrorBodySchema = z
  .object({ error: z.object({ code: z.string(), message: z.string() }).strict() })
  .strict();

export type IndexerStatus = z.output<typeof IndexerStatusSchema>;
export type StateProof = z.output<typeof StateProofSchema>;
export type AspProof = z.output<typeof AspProofSchema>;
export type NullifierStatus = z.output<typeof NullifierStatusSchema>;
export type DepositView = z.output<typeof DepositSchema>;
export type Trees = z.output<typeof TreesSchema>;
export type AnonymitySet = z.output<typeof AnonymitySetSchema>;
export type TreeLeaves = z.output<typeof TreeLeavesSchema>;
export type TreeLeavesQuery = z.output<typeof TreeLeavesQuerySchema>;
export type ErrorBody = z.output<typeof ErrorBodySchema>;

/** JSON text of a response body: bigints become decimal strings, the schemas' wire form. */
export function toWireJson(body: unknown): string {
  return JSON.stringify(body, (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value));
}
