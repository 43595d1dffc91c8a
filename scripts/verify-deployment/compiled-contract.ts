import { readFile } from "node:fs/promises";
import { getBytes } from "ethers";
import type { ArtifactManager } from "hardhat/types/artifacts";

/** A span of runtime bytecode that deployment fills in. */
export interface ByteRange {
  start: number;
  length: number;
}

/** A contract's runtime bytecode as this checkout compiles it, with the spans its deployment fills in. */
export interface CompiledContract {
  name: string;
  /** Runtime bytecode; link placeholders are zeros. */
  code: Uint8Array;
  /** Each immutable by its Solidity name, and where the constructor writes its value. */
  immutables: { name: string; ranges: ByteRange[] }[];
  /** Each linked library by name, and where its address goes. */
  links: { library: string; ranges: ByteRange[] }[];
  /** A library's runtime code starts with PUSH20 <its own address> (the call guard), written at deployment. */
  isLibrary: boolean;
  /** The names of its functions that take no argument: the getters of its public immutables among them. */
  getters: Set<string>;
}

interface AstNode {
  id?: number;
  nodeType?: string;
  name?: string;
  contractKind?: string;
  [key: string]: unknown;
}

/** The nodes of `ast`, depth first. */
function* walk(node: unknown): Generator<AstNode> {
  if (Array.isArray(node)) {
    for (const child of node) yield* walk(child);
  } else if (node !== null && typeof node === "object") {
    yield node as AstNode;
    for (const value of Object.values(node)) if (typeof value === "object") yield* walk(value);
  }
}

/** The AST nodes of every source of each build info's solc output, read once per run. */
const nodesByBuildInfo = new Map<string, Promise<AstNode[]>>();

function buildInfoNodes(artifacts: ArtifactManager, buildInfoId: string): Promise<AstNode[]> {
  let nodes = nodesByBuildInfo.get(buildInfoId);
  if (nodes === undefined) {
    nodes = (async () => {
      const file = await artifacts.getBuildInfoOutputPath(buildInfoId);
      if (file === undefined) throw new Error(`no build info ${buildInfoId}: run \`npx hardhat build\``);
      const { output } = JSON.parse(await readFile(file, "utf8")) as { output: { sources: Record<string, { ast: unknown }> } };
      return [...walk(Object.values(output.sources).map((source) => source.ast))];
    })();
    nodesByBuildInfo.set(buildInfoId, nodes);
  }
  return nodes;
}

/**
 * `name`'s runtime bytecode from this checkout's Hardhat artifacts, its immutables named from the compiler's AST
 * (immutableReferences are keyed by AST node id) and its library links (deployedLinkReferences). Nothing about any
 * contract is assumed: whatever the checkout compiles is what the chain must hold.
 */
export async function loadCompiledContract(artifacts: ArtifactManager, name: string): Promise<CompiledContract> {
  const artifact = await artifacts.readArtifact(name);
  if (artifact.buildInfoId === undefined) throw new Error(`the artifact of ${name} has no build info: run \`npx hardhat build\``);
  const nodes = await buildInfoNodes(artifacts, artifact.buildInfoId);
  const immutables = Object.entries(artifact.immutableReferences ?? {}).map(([id, ranges]) => {
    const declaration = nodes.find((node) => node.nodeType === "VariableDeclaration" && node.id === Number(id));
    if (declaration?.name === undefined) throw new Error(`${name}: no declaration of immutable #${id} in the build info`);
    return { name: declaration.name, ranges: [...ranges] };
  });
  const links = Object.values(artifact.deployedLinkReferences).flatMap((libraries) =>
    Object.entries(libraries).map(([library, ranges]) => ({ library, ranges: [...ranges] })),
  );
  const definition = nodes.find((node) => node.nodeType === "ContractDefinition" && node.name === name);
  return {
    name,
    code: getBytes(artifact.deployedBytecode.replace(/__\$[0-9a-f]{34}\$__/g, "0".repeat(40))),
    immutables,
    links,
    isLibrary: definition?.contractKind === "library",
    getters: new Set(
      (artifact.abi as { type: string; name?: string; inputs?: unknown[] }[])
        .filter((entry) => entry.type === "function" && entry.inputs?.length === 0)
        .map((entry) => entry.name!),
    ),
  };
}
