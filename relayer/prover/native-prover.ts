import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Groth16Proof, WithdrawProof } from "../../sdk/index.js";

const run = promisify(execFile);

/**
 * A rapidsnark-compatible prover binary, called as `<binary> <zkey> <witness.wtns> <proof.json> <public.json>`.
 * It is not trusted by itself: the prover service verifies each of its proofs against the verification key.
 */
export class NativeProver {
  constructor(
    readonly binary: string,
    private readonly zkeyPath: string,
  ) {}

  /** Proves the witness `wtns` (a .wtns file). Rejects when the binary fails or writes no readable proof. */
  async prove(wtns: Uint8Array): Promise<WithdrawProof> {
    // The witness holds the note's secrets: a directory only this user can read, removed right after.
    const dir = await mkdtemp(path.join(tmpdir(), "relayer-proof-"));
    const files = { wtns: path.join(dir, "witness.wtns"), proof: path.join(dir, "proof.json"), public: path.join(dir, "public.json") };
    try {
      await writeFile(files.wtns, wtns, { mode: 0o600 });
      await run(this.binary, [this.zkeyPath, files.wtns, files.proof, files.public]);
      return {
        proof: JSON.parse(await readFile(files.proof, "utf8")) as Groth16Proof,
        publicSignals: JSON.parse(await readFile(files.public, "utf8")) as string[],
      };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
