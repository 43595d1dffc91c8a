import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Prints `rows` as a two-column table under `heading`, the first column padded to the longest entry. */
export function printTable(heading: [string, string], rows: [string, string][]): void {
  const width = Math.max(heading[0].length, ...rows.map(([name]) => name.length));
  console.log(`\n${heading[0].padEnd(width)}  ${heading[1]}`);
  for (const [name, value] of rows) console.log(`${name.padEnd(width)}  ${value}`);
}

/** Writes bench/results/<name>.json with the machine the numbers were taken on, and says where. */
export async function writeResults(name: string, results: Record<string, unknown>): Promise<void> {
  const file = fileURLToPath(new URL(`./results/${name}.json`, import.meta.url));
  const machine = { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, node: process.version, loadAverage: os.loadavg()[0] };
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify({ machine, ...results }, null, 2)}\n`);
  console.log(`\nwritten to ${path.relative(process.cwd(), file)}`);
}

/** The `p`-th percentile (0-100) of `values` by the nearest-rank method. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) throw new RangeError("no values");
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Milliseconds `work` took. */
export async function elapsedMs(work: () => unknown): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}
