import Koa from "koa";
import type { Logger } from "pino";
import type { AddressBook } from "../../lib/address-book.js";
import type { IndexerQueries } from "../queries.js";
import { bearerAuth } from "./auth.js";
import { errorHandler } from "./error-handler.js";
import { indexerRouter } from "./routes.js";

export interface IndexerAppDeps {
  queries: IndexerQueries;
  /** The bearer token every route requires (INDEXER_TOKEN). */
  token: string;
  logger: Logger;
  /** The deployment it follows, served at /v1/deployment. */
  addressBook: AddressBook;
}

/** The indexer's HTTP API (docs/indexer.md): every route behind the bearer token, one error body shape. */
export function createIndexerApp({ queries, token, logger, addressBook }: IndexerAppDeps): Koa {
  const app = new Koa();
  app.silent = true;
  app.use(errorHandler(logger));
  app.use(bearerAuth(token));
  app.use(indexerRouter(queries, addressBook).routes());
  return app;
}
