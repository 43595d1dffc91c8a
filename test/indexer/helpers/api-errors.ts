import { expect } from "chai";
import { IndexerApiError } from "../../../indexer/client.js";

/** Resolves to the IndexerApiError `call` rejects with, after checking its status and code. */
export async function expectApiError(call: Promise<unknown>, status: number, code: string): Promise<IndexerApiError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, `expected ${status} ${code}`).to.be.instanceOf(IndexerApiError);
  expect(error).to.include({ status, code });
  return error as IndexerApiError;
}
