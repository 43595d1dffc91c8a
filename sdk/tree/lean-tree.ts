import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
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
const DIGEST_BYTES = 32;

/**
 * A tree is saved in chunks: its complete, aligned subtrees of CHUNK_LEAVES leaves. A LeanIMT promotes a node
 * without a sibling only at the right edge, so once a chunk's leaves are all in none of its nodes changes as the
 * tree grows: a chunk is written once, and a tree built again reads it back instead of hashing its nodes.
 */
export const CHUNK_DEPTH = 10;
export const CHUNK_LEAVES = 1 << CHUNK_DEPTH;
const CHUNK_NODES = 2 * CHUNK_LEAVES - 1;

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

  /**
   * The tree of `leaves`, its first chunks read back from `chunks` (as chunkBytes wrote them) as long as each is
   * intact and holds the same leaves as `leaves` there, the rest hashed as build does. `reused` says how many
   * chunks it took: a chunk made stale (leaves that changed since) and every one after it are hashed again.
   */
  static async buildFrom(
    leaves: readonly bigint[],
    chunks: readonly Uint8Array[],
    hasher: "auto" | "js" | string = "auto",
  ): Promise<{ tree: LeanTree; reused: number }> {
    const upper: bigint[][] = Array.from({ length: CHUNK_DEPTH }, () => []);
    let reused = 0;
    for (const bytes of chunks.slice(0, Math.floor(leaves.length / CHUNK_LEAVES))) {
      const levels = readChunk(bytes, leaves, reused * CHUNK_LEAVES);
      if (levels === undefined) break;
      levels.forEach((nodes, i) => upper[i]!.push(...nodes));
      reused++;
    }
    if (reused === 0) return { tree: await LeanTree.build(leaves, hasher), reused };
    // The leaves after the chunks make a LeanIMT of their own whose nodes are those of the whole tree at each level
    // up to the chunks' roots (every level starts at an even position), its root promoted up to there.
    const rest = await LeanTree.build(leaves.slice(reused * CHUNK_LEAVES), hasher);
    for (let level = 1; level <= CHUNK_DEPTH && rest.size > 0; level++) {
      upper[level - 1]!.push(...(level <= rest.depth ? rest.levels[level]! : [rest.root]));
    }
    const tree = new LeanTree([leaves.slice(), ...upper]);
    tree.hashUp(CHUNK_DEPTH, 0);
    return { tree, reused };
  }

  get size(): number {
    return this.levels[0]!.length;
  }

  /** How many complete chunks the tree has. */
  get chunkCount(): number {
    return Math.floor(this.size / CHUNK_LEAVES);
  }

  /**
   * The nodes of complete chunk `index` (level by level, from its leaves to its root, 32 big-endian bytes each),
   * then their SHA-256, so that a damaged chunk is never read back.
   */
  chunkBytes(index: number): Buffer {
    if (!Number.isInteger(index) || index < 0 || index >= this.chunkCount) throw new RangeError(`chunk ${index} is not complete in a tree of ${this.size} leaves`);
    const bytes = Buffer.alloc(CHUNK_NODES * WORD_BYTES + DIGEST_BYTES);
    let at = 0;
    for (let level = 0; level <= CHUNK_DEPTH; level++) {
      const width = CHUNK_LEAVES >> level;
      at = writeWords(bytes, at, this.levels[level]!, index * width, width);
    }
    createHash("sha256").update(bytes.subarray(0, at)).digest().copy(bytes, at);
    return bytes;
  }

  /** The root, 0 while the tree is empty (as the pool's currentRoot and the entrypoint's latestRoot). */
  get root(): bigint {
    return this.levels[this.levels.length - 1]![0] ?? 0n;
  }

  /** The depth the circuit and the entrypoint read with the root (0 for one leaf or none). */
  get depth(): number {
    return this.levels.length - 1;
  }

  /**
   * The root of the tree of the first `size` leaves (0 for none), in at most one hash a level: a node whose
   * leaves are all among those is the same in both trees, so only the prefix's right edge is hashed again.
   */
  rootAt(size: number): bigint {
    if (!Number.isInteger(size) || size < 0 || size > this.size) throw new RangeError(`a tree of ${this.size} leaves has no prefix of ${size}`);
    if (size === this.size) return this.root;
    if (size === 0) return 0n;
    let edge = this.levels[0]![size - 1]!;
    for (let level = 0, last = size - 1; last > 0; level++, last >>= 1) {
      if (last % 2 === 1) edge = nodeHash(this.levels[level]![last - 1]!, edge);
    }
    return edge;
  }

  /** The leaves, in order; not to be changed. */
  get leaves(): readonly bigint[] {
    return this.levels[0]!;
  }

  /** Appends `leaves`, hashing only the nodes they change (about one per leaf, and one per level). */
  insertMany(leaves: readonly bigint[]): void {
    if (leaves.length === 0) return;
    const bottom = this.levels[0]!;
    const changedFrom = bottom.length;
    for (const leaf of leaves) bottom.push(leaf);
    this.hashUp(0, changedFrom);
  }

  /** Hashes the parents of the nodes of `level` from position `changedFrom` on, and theirs, up to the root. */
  private hashUp(fromLevel: number, changedFrom: number): void {
    for (let level = fromLevel; this.levels[level]!.length > 1; level++) {
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
    const nodes = this.levels.flat();
    const bytes = Buffer.alloc(nodes.length * WORD_BYTES);
    writeWords(bytes, 0, nodes, 0, nodes.length);
    return bytes;
  }

  /** The tree `toBytes` wrote for `size` leaves; undefined when the bytes do not hold such a tree. */
  static fromBytes(bytes: Uint8Array, size: number): LeanTree | undefined {
    const sizes = levelSizes(size);
    if (bytes.byteLength !== sizes.reduce((sum, n) => sum + n, 0) * WORD_BYTES) return undefined;
    let at = 0;
    return new LeanTree(sizes.map((n) => readWords(bytes, (at += n) - n, n)));
  }
}

/** The number of nodes on each level of a LeanIMT of `size` leaves, leaves first. */
function levelSizes(size: number): number[] {
  const sizes = [size];
  while (sizes[sizes.length - 1]! > 1) sizes.push(Math.ceil(sizes[sizes.length - 1]! / 2));
  return sizes;
}

/** Writes `count` of `values` from `from` on into `bytes` at byte `at`, 32 big-endian bytes each; returns where it stopped. */
function writeWords(bytes: Uint8Array, at: number, values: readonly bigint[], from: number, count: number): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = from; i < from + count; i++, at += WORD_BYTES) {
    const value = values[i]!;
    view.setBigUint64(at, value >> 192n);
    view.setBigUint64(at + 8, BigInt.asUintN(64, value >> 128n));
    view.setBigUint64(at + 16, BigInt.asUintN(64, value >> 64n));
    view.setBigUint64(at + 24, BigInt.asUintN(64, value));
  }
  return at;
}

/** `count` numbers of 32 big-endian bytes from word `first` of `bytes` on. */
function readWords(bytes: Uint8Array, first: number, count: number): bigint[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const words = new Array<bigint>(count);
  for (let i = 0, at = first * WORD_BYTES; i < count; i++, at += WORD_BYTES) {
    words[i] = (view.getBigUint64(at) << 192n) | (view.getBigUint64(at + 8) << 128n) | (view.getBigUint64(at + 16) << 64n) | view.getBigUint64(at + 24);
  }
  return words;
}

/**
 * The levels above the leaves of a chunk chunkBytes wrote, when its digest holds and its leaves are those of
 * `leaves` from `offset` on; undefined otherwise.
 */
function readChunk(bytes: Uint8Array, leaves: readonly bigint[], offset: number): bigint[][] | undefined {
  if (bytes.byteLength !== CHUNK_NODES * WORD_BYTES + DIGEST_BYTES) return undefined;
  const chunkLeaves = readWords(bytes, 0, CHUNK_LEAVES);
  if (chunkLeaves.some((leaf, i) => leaf !== leaves[offset + i])) return undefined;
  const nodes = Buffer.from(bytes.buffer, bytes.byteOffset, CHUNK_NODES * WORD_BYTES);
  if (!createHash("sha256").update(nodes).digest().equals(bytes.subarray(nodes.byteLength))) return undefined;
  const levels: bigint[][] = [];
  for (let level = 1, at = CHUNK_LEAVES; level <= CHUNK_DEPTH; at += CHUNK_LEAVES >> level, level++) levels.push(readWords(bytes, at, CHUNK_LEAVES >> level));
  return levels;
}

/** The levels of the tree of `leaves`, hashed by `binary lean-tree` in one call (at any size: build falls back to JavaScript, this throws). */
export async function nativeLevels(binary: string, leaves: readonly bigint[]): Promise<bigint[][]> {
  const { externalInitial, internal, externalFinal } = POSEIDON2_T3_CONSTANTS;
  const constants = [...externalInitial.flat(), ...internal, ...externalFinal.flat()];
  const input = Buffer.alloc(4 + (constants.length + leaves.length) * WORD_BYTES);
  input.writeUInt32LE(leaves.length);
  writeWords(input, writeWords(input, 4, constants, 0, constants.length), leaves, 0, leaves.length);
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
  let at = 0;
  return [leaves.slice(), ...sizes.map((n) => readWords(output, (at += n) - n, n))];
}
