import Router from "@koa/router";
import type { Context } from "koa";
import type { AddressBook } from "../../lib/address-book.js";
import { FieldElementSchema } from "../../sdk/schema/primitives.js";
import { INDEXER_ROUTES, TreeLeavesQuerySchema, toWireJson } from "../api.js";
import { IndexerError } from "../errors.js";
import type { IndexerQueries } from "../queries.js";

/** Thin routes: parse the path parameter, ask the queries, send the answer. */
export function indexerRouter(queries: IndexerQueries, addressBook: AddressBook): Router {
  const router = new Router();
  router.get(INDEXER_ROUTES.deployment, (ctx) => send(ctx, addressBook));
  router.get(INDEXER_ROUTES.status, async (ctx) => send(ctx, await queries.servingStatus()));
  router.get(INDEXER_ROUTES.trees, (ctx) => send(ctx, queries.trees()));
  router.get(INDEXER_ROUTES.anonymitySet, (ctx) => send(ctx, queries.anonymitySet(fieldParam(ctx, "withdrawnValue"))));
  router.get(INDEXER_ROUTES.treeLeaves, (ctx) => {
    ctx.type = "application/json";
    ctx.body = queries.treeLeavesJson(treeLeavesQuery(ctx.query));
  });
  router.get(INDEXER_ROUTES.stateProof, (ctx) => send(ctx, queries.stateProof(fieldParam(ctx, "commitment"))));
  router.get(INDEXER_ROUTES.aspProof, (ctx) => send(ctx, queries.aspProof(fieldParam(ctx, "label"))));
  router.get(INDEXER_ROUTES.nullifier, async (ctx) =>
    send(ctx, await queries.nullifier(fieldParam(ctx, "nullifierHash"))),
  );
  router.get(INDEXER_ROUTES.deposit, async (ctx) => send(ctx, await queries.deposit(fieldParam(ctx, "label"))));
  return router;
}

function fieldParam(ctx: Context & { params: Record<string, string> }, name: string): bigint {
  const parsed = FieldElementSchema.safeParse(ctx.params[name]);
  if (!parsed.success) throw new IndexerError("INVALID_REQUEST", `${name} ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

function treeLeavesQuery(query: unknown) {
  const parsed = TreeLeavesQuerySchema.safeParse(query);
  if (!parsed.success) throw new IndexerError("INVALID_REQUEST", `stateFrom and aspFrom must be leaf counts, stateFromRoot and aspFromRoot field elements: ${parsed.error.issues[0]?.path.join(".")} ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

function send(ctx: Context, body: unknown): void {
  ctx.type = "application/json";
  ctx.body = toWireJson(body);
}
