import type { z } from "zod";
import { RelayerError } from "../errors.js";

/**
 * Fields whose problems are docs/api.md section 7's "Invalid payment amount" rather than a generic bad request
 * (`amount` is an x402 v2 seller entry's).
 */
const AMOUNT_FIELDS = new Set(["maxAmountRequired", "amountAtomic", "amount"]);

/** Parses a request part with its schema; every problem is named by its path in one 400 answer. */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const parsed = schema.safeParse(input ?? {});
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues;
  const problems = issues.map((issue) => `${issue.path.join(".") || "body"}: ${issue.message}`).join("; ");
  const amountProblem = issues.some((issue) => issue.path.some((key) => AMOUNT_FIELDS.has(String(key))));
  throw new RelayerError(
    amountProblem ? "INVALID_PAYMENT_AMOUNT" : "INVALID_REQUEST",
    amountProblem ? `Invalid payment amount: send an atomic-USDC string such as "1000000". ${problems}` : `Invalid request: ${problems}`,
  );
}
