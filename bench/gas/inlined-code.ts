import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ARTIFACTS = fileURLToPath(new URL("../../artifacts/", import.meta.url));

interface CompilerOutput {
  output: {
    sources: Record<string, { id: number }>;
    contracts: Record<string, Record<string, { evm: { deployedBytecode: { object: string; sourceMap: string } } }>>;
  };
}

/**
 * The program counters of `contract`'s deployed code that the compiler mapped to a source file whose name ends with
 * `sourceSuffix`: the code of an internal library inlined into the contract, whose gas no call frame shows. Read
 * from the compiler's source map (one `s:l:f:j:m` entry per instruction, empty fields repeating the previous).
 */
export async function inlinedCode(contract: string, sourceSuffix: string): Promise<Set<number>> {
  const artifact = JSON.parse(await readFile(path.join(ARTIFACTS, "contracts", `${contract}.sol`, `${contract}.json`), "utf8")) as {
    inputSourceName: string;
    buildInfoId: string;
  };
  const build = JSON.parse(await readFile(path.join(ARTIFACTS, "build-info", `${artifact.buildInfoId}.output.json`), "utf8")) as CompilerOutput;
  const fileIds = new Set(Object.entries(build.output.sources).filter(([name]) => name.endsWith(sourceSuffix)).map(([, { id }]) => id));
  const { object, sourceMap } = build.output.contracts[artifact.inputSourceName]![contract]!.evm.deployedBytecode;

  // Linked libraries' addresses are placeholders (__$<hash>$__) until deployment; only the instruction widths matter.
  const code = Buffer.from(object.replace(/^0x/, "").replace(/__\$[0-9a-f]{34}\$__/g, "0".repeat(40)), "hex");
  const entries = sourceMap.split(";");
  const pcs = new Set<number>();
  let file = -1;
  for (let pc = 0, instruction = 0; pc < code.length && instruction < entries.length; instruction++) {
    const field = entries[instruction]!.split(":")[2];
    if (field !== undefined && field !== "") file = Number(field);
    if (fileIds.has(file)) pcs.add(pc);
    const op = code[pc]!;
    // PUSH1..PUSH32 carry 1..32 bytes of immediate data.
    pc += op >= 0x60 && op <= 0x7f ? op - 0x5e : 1;
  }
  return pcs;
}
