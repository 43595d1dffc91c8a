/** One line of the table: what was checked, what this checkout and the address book say, what the chain holds. */
export interface DeploymentCheck {
  check: string;
  expected: string;
  found: string;
  ok: boolean;
}

/** Collects checks; `ok` defaults to the expected and found text being equal. */
export function checkList() {
  const checks: DeploymentCheck[] = [];
  const add = (check: string, expected: string, found: string, ok = expected === found) => void checks.push({ check, expected, found, ok });
  return { checks, add };
}

export const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The checks as a table: check, expected, found, ok. */
export function formatChecks(checks: DeploymentCheck[]): string {
  const rows = [["check", "expected", "found", "ok"], ...checks.map((check) => [check.check, check.expected, check.found, check.ok ? "ok" : "MISMATCH"])];
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => (column < 3 ? cell.padEnd(widths[column]!) : cell)).join(" | ")).join("\n");
}
