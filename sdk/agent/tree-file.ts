import { readFile, rename, writeFile } from "node:fs/promises";
import { SyncedTree } from "../tree/synced-tree.js";

/** The facilitator's trees as an agent keeps them between payments. */
export interface AgentTrees {
  state: SyncedTree;
  asp: SyncedTree;
}

export function emptyTrees(): AgentTrees {
  return { state: new SyncedTree(), asp: new SyncedTree() };
}

const MAGIC = "x402-trees-v1\n";
const HEADER_BYTES = MAGIC.length + 16;

/**
 * The trees kept in `path` (X402AgentOptions.treesPath), or empty ones when there is no such file or it does not
 * hold trees: they are public data and a cache, checked against every quote's roots, so a bad file only costs a
 * full download.
 */
export async function loadTrees(path: string): Promise<AgentTrees> {
  const bytes = await readFile(path).catch(() => undefined);
  if (bytes === undefined || bytes.byteLength < HEADER_BYTES || bytes.toString("latin1", 0, MAGIC.length) !== MAGIC) return emptyTrees();
  const [stateSize, stateBytes, aspSize, aspBytes] = [0, 1, 2, 3].map((i) => bytes.readUInt32LE(MAGIC.length + 4 * i)) as [number, number, number, number];
  if (bytes.byteLength !== HEADER_BYTES + stateBytes + aspBytes) return emptyTrees();
  return {
    state: SyncedTree.fromBytes(stateSize, bytes.subarray(HEADER_BYTES, HEADER_BYTES + stateBytes)),
    asp: SyncedTree.fromBytes(aspSize, bytes.subarray(HEADER_BYTES + stateBytes)),
  };
}

/** Writes `trees` to `path` (whole or not at all: through a temporary file). */
export async function saveTrees(path: string, trees: AgentTrees): Promise<void> {
  const state = trees.state.toBytes();
  const asp = trees.asp.toBytes();
  const header = Buffer.alloc(HEADER_BYTES);
  header.write(MAGIC, 0, "latin1");
  [state.size, state.nodes.byteLength, asp.size, asp.nodes.byteLength].forEach((value, i) => header.writeUInt32LE(value, MAGIC.length + 4 * i));
  const partial = `${path}.partial`;
  await writeFile(partial, Buffer.concat([header, state.nodes, asp.nodes]));
  await rename(partial, path);
}
