import { spawn } from "node:child_process";
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { MAX_TREE_DEPTH } from "../circuit/config.js";
import { POSEIDON2_T3_CONSTANTS } from "../crypto/poseidon2-constants.js";
import { builtNativeProver } from "../prover/native-process.js";
import { nodeHash, type MerkleWitness } from "./merkle-witness.js";

/** Below this many leaves a build hashes in JavaScript (starting the native hasher costs a few milliseconds). */
const NATIVE_BUILD_MIN_LEAVES = 512;
/** Nodes hashed in JavaScript between two yields to the event loop while a big tree is built. */
const JS_BUILD_CHUNK = 2_048;
const WORD_BYTES = 32;

/**
 * The pool's and the circuit's LeanIMT (as @zk-kit/lean-imt builds it: a node without a right sibling moves up
 * unchanged, the depth grows with the leaves) kept as its levels, so that a whole tree can be hashed in one call by
 * the native hasher (the `lean-tree` command of native-prover/, tens of times faster than Poseidon2 in JavaScript)
 * and a path read straight off the levels in the circuit's form.
 */
export class LeanTree {
  /** levels[0] the leaves, each next level their parents, the last one the root alone (or no leaf). */
  private constructor(private readonly levels: bigint[][]) {}

  static empty(): LeanTree {
    return new LeanTree([[]]);
  }

  /**
   * The tree of `leaves`, hashed by the native hasher when the native prover is built and the tree is big enough,
   * else in JavaScript in chunks that leave the event loop free in between. `hasher` names another native binary,
   * or "js" for JavaScript alone.
   */
  static async build(leaves: readonly bigint[], hasher: "auto" | "js" | string = "auto"): Promise<LeanTree> {
    const binary = hasher === "js" ? undefined : hasher === "auto" ? builtNativeProver() : hasher;
    if (binary !== undefined && leaves.length >= NATIVE_BUILD_MIN_LEAVES) {
      const levels = await nativeLevels(binary, leaves).catch(() => undefined); // JavaScript builds the same tree
      if (levels) return new LeanTree(levels);
    }
    const tree = LeanTree.empty();
    for (let start = 0; start < leaves.length; start += JS_BUILD_CHUNK) {
      tree.insertMany(leaves.slice(start, start + JS_BUILD_CHUNK));
      await yieldToEventLoop();
    }
    return tree;
  }

  get size(): number {
    return this.levels[0]!.length;
  }

  /** The root, 0 while the tree is empty (as the pool's currentRoot and the entrypoint's latestRoot). */
  get root(): bigint {
    return this.levels[this.levels.length - 1]![0] ?? 0n;
  }

  /** The depth the circuit and the entrypoint read with the root (0 for one leaf or none). */
  get depth(): number {
    return this.levels.length - 1;
  }

  /** The leaves, in order; not to be changed. */
  get leaves(): readonly bigint[] {
    return this.levels[0]!;
  }

  /** Appends `leaves`, hashing only the nodes they change (about one per leaf, and one per level). */
  insertMany(leaves: readonly bigint[]): void {
    if (leaves.length === 0) return;
    const bottom = this.levels[0]!;
    let changedFrom = bottom.length;
    for (const leaf of leaves) bottom.push(leaf);
    for (let level = 0; this.levels[level]!.length > 1; level++) {
      const children = this.levels[level]!;
      const parents = (this.levels[level + 1] ??= []);
      const count = Math.ceil(children.length / 2);
      for (let i = changedFrom >> 1; i < count; i++) {
        parents[i] = 2 * i + 1 < children.length ? nodeHash(children[2 * i]!, children[2 * i + 1]!) : children[2 * i]!;
      }
      changedFrom >>= 1;
    }
  }

  /** The circuit-form path of the leaf at `index`: a sibling per level, 0 where there is none, padded to `maxDepth`. */
  witness(index: number, maxDepth = MAX_TREE_DEPTH): MerkleWitness {
    if (!Number.isInteger(index) || index < 0 || index >= this.size) throw new RangeError(`leaf ${index} is not in a tree of ${this.size} leaves`);
    if (this.depth > maxDepth) throw new RangeError(`tree depth ${this.depth} exceeds the circuit's maximum depth ${maxDepth}`);
    const siblings: bigint[] = [];
    for (let level = 0, node = index; level < this.depth; level++, node >>= 1) siblings.push(this.levels[level]![node ^ 1] ?? 0n);
    while (siblings.length < maxDepth) siblings.push(0n);
    return { root: this.root, depth: this.depth, index, siblings };
  }

  /** An independent copy (no hashing). */
  copy(): LeanTree {
    return new LeanTree(this.levels.map((level) => level.slice()));
  }

  /** Every node, bottom level first, 32 big-endian bytes each: what `fromBytes` reads back. */
  toBytes(): Buffer {
    return Buffer.from(this.levels.flat().map(hexWord).join(""), "hex");
  }

  /** The tree `toBytes` wrote for `size` leaves; undefined when the bytes do not hold such a tree. */
  static fromBytes(bytes: Uint8Array, size: number): LeanTree | undefined {
    const sizes = levelSizes(size);
    if (bytes.byteLength !== sizes.reduce((sum, n) => sum + n, 0) * WORD_BYTES) return undefined;
    const words = readWords(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    let at = 0;
    return new LeanTree(sizes.map((n) => words.slice(at, (at += n))));
  }
}

/** The number of nodes on each level of a LeanIMT of `size` leaves, leaves first. */
function levelSizes(size: number): number[] {
  const sizes = [size];
  while (sizes[sizes.length - 1]! > 1) sizes.push(Math.ceil(sizes[sizes.length - 1]! / 2));
  return sizes;
}

const hexWord = (value: bigint): string => value.toString(16).padStart(2 * WORD_BYTES, "0");

function readWords(bytes: Buffer): bigint[] {
  const hex = bytes.toString("hex");
  return Array.from({ length: bytes.byteLength / WORD_BYTES }, (_, i) => BigInt(`0x${hex.slice(i * 2 * WORD_BYTES, (i + 1) * 2 * WORD_BYTES)}`));
}

/** The levels of the tree of `leaves`, hashed by `binary lean-tree` in one call. */
async function nativeLevels(binary: string, leaves: readonly bigint[]): Promise<bigint[][]> {
  const { externalInitial, internal, externalFinal } = POSEIDON2_T3_CONSTANTS;
  const constants = [...externalInitial.flat(), ...internal, ...externalFinal.flat()];
  const count = Buffer.alloc(4);
  count.writeUInt32LE(leaves.length);
  const input = Buffer.concat([count, Buffer.from([...constants, ...leaves].map(hexWord).join(""), "hex")]);
  const output = await new Promise<Buffer>((resolve, reject) => {
    const child = spawn(binary, ["lean-tree"], { stdio: ["pipe", "pipe", "pipe"] });
    const chunks: Buffer[] = [];
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.stdin.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(Buffer.concat(chunks)) : reject(new Error(`lean-tree exited with ${code}: ${stderr.trim()}`))));
    child.stdin.end(input);
  });
  const sizes = levelSizes(leaves.length).slice(1);
  if (output.byteLength !== sizes.reduce((sum, n) => sum + n, 0) * WORD_BYTES) throw new Error("lean-tree answered a wrong number of nodes");
  const nodes = readWords(output);
  let at = 0;
  return [leaves.slice(), ...sizes.map((n) => nodes.slice(at, (at += n)))];
}
