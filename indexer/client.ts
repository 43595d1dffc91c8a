import type { z } from "zod";
import { AddressBookSchema, type AddressBook } from "../lib/address-book.js";
import {
  AnonymitySetSchema,
  AspProofSchema,
  DepositSchema,
  ErrorBodySchema,
  INDEXER_ROUTES,
  IndexerStatusSchema,
  NullifierStatusSchema,
  routePath,
  StateProofSchema,
  TreeLeavesSchema,
  TreesSchema,
  type AnonymitySet,
  type AspProof,
  type DepositView,
  type IndexerStatus,
  type NullifierStatus,
  type StateProof,
  type TreeLeaves,
  type TreeLeavesQuery,
  type Trees,
} from "./api.js";

/** An error answer of the indexer API; `code` is a key of INDEXER_ERROR_STATUS (e.g. DEPOSIT_NOT_FOUND). */
export class IndexerApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "IndexerApiError";
  }
}

export interface IndexerClientOptions {
  /** e.g. http://127.0.0.1:8788 */
  baseUrl: string;
  token: string;
  timeoutMs?: number;
}

/** Typed client of the indexer API, for the relayer: answers parsed back to bigints by the server's schemas. */
export class IndexerClient {
  constructor(private readonly options: IndexerClientOptions) {}

  status(): Promise<IndexerStatus> {
    return this.get(routePath(INDEXER_ROUTES.status), IndexerStatusSchema);
  }

  /** The state-tree path of `commitment`, in the circuit's form. */
  stateProof(commitment: bigint): Promise<StateProof> {
    return this.get(routePath(INDEXER_ROUTES.stateProof, { commitment }), StateProofSchema);
  }

  /** The path of `label` in the ASP tree whose root is on chain. */
  aspProof(label: bigint): Promise<AspProof> {
    return this.get(routePath(INDEXER_ROUTES.aspProof, { label }), AspProofSchema);
  }

  /** The anonymity set of a payment withdrawing `withdrawnValue`. */
  anonymitySet(withdrawnValue: bigint): Promise<AnonymitySet> {
    return this.get(routePath(INDEXER_ROUTES.anonymitySet, { withdrawnValue }), AnonymitySetSchema);
  }

  /** Root, depth and size of the state tree and of the on-chain ASP tree. */
  trees(): Promise<Trees> {
    return this.get(routePath(INDEXER_ROUTES.trees), TreesSchema);
  }

  /** Both trees with their leaves after those the caller has (every leaf by default: large, 32 bytes a note). */
  async treeLeaves(from?: Partial<TreeLeavesQuery>): Promise<TreeLeaves> {
    return TreeLeavesSchema.parse(JSON.parse(Buffer.from(await this.treeLeavesJson(from)).toString("utf8")));
  }

  /** treeLeaves' answer as the indexer sent it, JSON bytes unread: what the relayer passes on to agents. */
  async treeLeavesJson(from: Partial<TreeLeavesQuery> = {}): Promise<Uint8Array> {
    const query = new URLSearchParams(
      Object.entries(from)
        .filter(([, value]) => value !== undefined)
        .map(([name, value]): [string, string] => [name, String(value)]),
    );
    const response = await this.fetch(`${routePath(INDEXER_ROUTES.treeLeaves)}?${query}`);
    if (!response.ok) await this.throwError(response);
    return new Uint8Array(await response.arrayBuffer());
  }

  nullifier(nullifierHash: bigint): Promise<NullifierStatus> {
    return this.get(routePath(INDEXER_ROUTES.nullifier, { nullifierHash }), NullifierStatusSchema);
  }

  /** The address book the indexer follows. */
  deployment(): Promise<AddressBook> {
    return this.get(routePath(INDEXER_ROUTES.deployment), AddressBookSchema);
  }

  deposit(label: bigint): Promise<DepositView> {
    return this.get(routePath(INDEXER_ROUTES.deposit, { label }), DepositSchema);
  }

  private async get<S extends z.ZodType>(path: string, schema: S): Promise<z.output<S>> {
    const response = await this.fetch(path);
    if (!response.ok) await this.throwError(response);
    return schema.parse(await response.json());
  }

  private fetch(path: string): Promise<Response> {
    return fetch(new URL(path, this.options.baseUrl), {
      headers: { authorization: `Bearer ${this.options.token}` },
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
    });
  }

  private async throwError(response: Response): Promise<never> {
    const parsed = ErrorBodySchema.safeParse(await response.json().catch(() => undefined));
    if (!parsed.success) throw new IndexerApiError(response.status, "UNKNOWN", `indexer answered HTTP ${response.status}`);
    throw new IndexerApiError(response.status, parsed.data.error.code, parsed.data.error.message);
  }
}
