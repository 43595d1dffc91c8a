import type { WithdrawProof } from "../circuit/prover.js";
import type { MsmSums } from "./proof-assembly.js";
import type { WitnessMsm } from "./proving-engine.js";
import { FIELD_ELEMENT_BYTES } from "./proving-key.js";
import { witnessValues } from "./witness.js";
import type { WorkerPool } from "./worker-pool.js";

/** Jobs the quotient's multi-exponentiation is cut into per worker: few, yet none long enough to idle the rest. */
const QUOTIENT_PARTS_PER_WORKER = 4;
const WITNESS_MSMS: WitnessMsm[] = ["b2", "a", "b1", "c"];

/**
 * Proves a witness (a .wtns file) with the work spread over the pool's workers: the quotient and the four
 * multi-exponentiations over the witness at once, windows of the quotient's multi-exponentiation once the
 * quotient is known, then the assembly. Every job carries `priority`, the proof's place in line.
 */
export async function proveWitness(pool: WorkerPool, wtns: Uint8Array, priority: number): Promise<WithdrawProof> {
  const shape = await pool.shape;
  const witness = witnessValues(wtns);
  const sum = async (job: Promise<{ sum: Uint8Array }>) => (await job).sum;

  const quotient = pool.run({ kind: "quotient", witness }, priority);
  // The longest first, so that the short ones fill in around the quotient's windows.
  const witnessSums = Promise.all(
    WITNESS_MSMS.map(async (msm) => [msm, [await sum(pool.run({ kind: "witnessMsm", msm, witness }, priority))]] as const),
  );
  const quotientSums = quotient.then(({ h }) =>
    Promise.all(
      windowRuns(shape.quotientWindows, pool.size * QUOTIENT_PARTS_PER_WORKER).map(([first, last]) =>
        sum(pool.run({ kind: "quotientMsm", h, first, last }, priority)),
      ),
    ),
  );
  const [byMsm, h] = await Promise.all([witnessSums, quotientSums]);
  const sums = { ...Object.fromEntries(byMsm), h } as MsmSums;
  const { proof } = await pool.run({ kind: "assemble", sums }, priority);
  return { proof, publicSignals: publicSignals(witness, shape.nPublic) };
}

/** `windows` cut into at most `parts` contiguous runs [first, last) of near-equal length. */
function windowRuns(windows: number, parts: number): [number, number][] {
  const count = Math.min(windows, parts);
  return Array.from({ length: count }, (_, i) => [Math.floor((i * windows) / count), Math.floor(((i + 1) * windows) / count)]);
}

/** The public signals: the witness values after the constant 1, as decimal strings. */
function publicSignals(witness: Uint8Array, nPublic: number): string[] {
  return Array.from({ length: nPublic }, (_, i) => {
    let value = 0n;
    for (let byte = (i + 2) * FIELD_ELEMENT_BYTES - 1; byte >= (i + 1) * FIELD_ELEMENT_BYTES; byte--) value = (value << 8n) | BigInt(witness[byte]!);
    return value.toString();
  });
}
