import { expect } from "chai";
import { execFile } from "node:child_process";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { CHUNK_LEAVES, createLeanIMT, hash1, LeanTree, merkleWitness, packLeaves, SNARK_SCALAR_FIELD, SyncedTree, unpackLeaves } from "../../sdk/index.js";
import { builtNativeProver } from "../../sdk/prover/native-process.js";
import { nativeLevels } from "../../sdk/tree/lean-tree.js";

const leaves = (n: number, salt = 0n) => Array.from({ length: n }, (_, i) => hash1(BigInt(i + 1) + salt));

/** What a LeanIMT of `list` (the pool's tree) has: size, depth, root and the first and last leaves' paths. */
function expectSameTree(tree: LeanTree | undefined, list: bigint[]): void {
  const fresh = createLeanIMT(list);
  expect(tree, "a tree").to.not.equal(undefined);
  expect(tree!.size).to.equal(list.length);
  expect(tree!.depth).to.equal(fresh.depth);
  expect(tree!.root).to.equal(list.length === 0 ? 0n : fresh.root);
  for (const index of list.length === 0 ? [] : [0, list.length >> 1, list.length - 1]) {
    expect(tree!.witness(index), `path of leaf ${index} of ${list.length}`).to.deep.equal(merkleWitness(fresh, index));
  }
}

/** A facilitator's tree as the trees route serves it: its shape, and its leaves after `from` (from 0 when past its end). */
function served(list: bigint[], from: number) {
  const start = from <= list.length ? from : 0;
  return { root: list.length === 0 ? 0n : createLeanIMT(list).root, size: list.length, from: start, leaves: packLeaves(list.slice(start)) };
}

describe("LeanTree: the pool's LeanIMT as levels", function () {
  it("appends in JavaScript across depth changes as LeanIMT builds, paths included", function () {
    const all = leaves(40);
    const tree = LeanTree.empty();
    let size = 0;
    for (const next of [0, 1, 2, 3, 5, 8, 8, 17, 33, 40]) {
      tree.insertMany(all.slice(size, next));
      size = next;
      expectSameTree(tree, all.slice(0, size));
    }
  });

  it("builds a large tree natively (or in JavaScript without the native prover) with LeanIMT's root and paths, and reads back its bytes", async function () {
    const list = leaves(3_001);
    const built = await LeanTree.build(list);
    expectSameTree(built, list);
    expectSameTree(LeanTree.fromBytes(built.toBytes(), list.length), list);
    expect(LeanTree.fromBytes(built.toBytes(), list.length + 1)).to.equal(undefined);
    expectSameTree(await LeanTree.build(list.slice(0, 700), "js"), list.slice(0, 700));
  });

  it("hashes every node natively as JavaScript does, with each kernel build, at sizes around the hasher's lanes", async function () {
    const binary = builtNativeProver();
    if (!binary) this.skip(); // `npm ci` without a compiler: build hashes in JavaScript
    // The native hasher hashes 4 nodes at a time (24 with AVX-512) and shares levels of 768 pairs or more out to the
    // threads: trees smaller than that, of exactly that, with odd levels, and of more than a thread's run, each node
    // compared, so that a node hashed in a wrong lane shows.
    const dir = await mkdtemp(path.join(tmpdir(), "lean-tree-"));
    try {
      const hashers: { binary: string; kernels: string }[] = [];
      for (const forced of ["", "bmi2adx", "portable"]) {
        const forcing = path.join(dir, `prover-${forced || "auto"}`);
        await writeFile(forcing, `#!/bin/sh\nGROTH16_PROVER_CPU=${forced} exec ${JSON.stringify(binary)} "$@"\n`);
        await chmod(forcing, 0o755);
        hashers.push({ binary: forcing, kernels: (await promisify(execFile)(forcing, ["cpu"])).stdout.trim() });
      }
      // A CPU with AVX-512 IFMA hashes with it: a failed self-test (a wrong AVX-512 path) would fall back unseen.
      const cpuFlags = await readFile("/proc/cpuinfo", "utf8").catch(() => "");
      if (/\bavx512ifma\b/.test(cpuFlags)) expect(hashers[0]!.kernels).to.equal("bmi2adx avx512ifma");
      expect(hashers[1]!.kernels, "no AVX-512 when BMI2/ADX is forced").to.be.oneOf(["bmi2adx bmi2adx", "portable portable"]);
      expect(hashers[2]!.kernels).to.equal("portable portable");
      const edges = [0n, 1n, SNARK_SCALAR_FIELD - 1n, SNARK_SCALAR_FIELD - 2n];
      const list = [...edges, ...leaves(1_800 - edges.length, 77n)];
      for (const size of [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 47, 48, 49, 50, 1_023, 1_025, 1_800]) {
        const expected = (await LeanTree.build(list.slice(0, size), "js")).toBytes().toString("hex");
        for (const { binary: hasher, kernels } of hashers) {
          const levels = await nativeLevels(hasher, list.slice(0, size));
          const hex = levels.flat().map((node) => node.toString(16).padStart(64, "0")).join("");
          expect(hex, `the nodes of ${size} leaves (kernels: ${kernels})`).to.equal(expected);
        }
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("builds again from saved chunks: reads back those that still hold the leaves and are intact, hashes the rest", async function () {
    const list = leaves(3 * CHUNK_LEAVES + 600);
    const built = await LeanTree.build(list);
    expect(built.chunkCount).to.equal(3);
    expect(() => built.chunkBytes(3), "an incomplete chunk").to.throw(RangeError);
    const chunks = [0, 1, 2].map((i) => built.chunkBytes(i));
    for (const [size, hasher] of [[CHUNK_LEAVES, "auto"], [2 * CHUNK_LEAVES + 1, "js"], [list.length, "auto"]] as const) {
      const { tree, reused } = await LeanTree.buildFrom(list.slice(0, size), chunks, hasher);
      expect(reused, `chunks read back for ${size} leaves`).to.equal(Math.floor(size / CHUNK_LEAVES));
      expectSameTree(tree, list.slice(0, size));
    }

    // A leaf of chunk 1 replaced (a reorg): chunk 1 and those after it are hashed again.
    const reorged = list.map((leaf, i) => (i === CHUNK_LEAVES + 5 ? hash1(1_000_000n) : leaf));
    const fromStale = await LeanTree.buildFrom(reorged, chunks);
    expect(fromStale.reused).to.equal(1);
    expectSameTree(fromStale.tree, reorged);
    // A damaged chunk (one bit of a node flipped, or cut short) is not read back, nor any after it.
    const flipped = Buffer.from(chunks[1]!);
    flipped[CHUNK_LEAVES * 32 + 7]! ^= 1;
    expect((await LeanTree.buildFrom(list, [chunks[0]!, flipped, chunks[2]!])).reused).to.equal(1);
    expect((await LeanTree.buildFrom(list, [chunks[0]!.subarray(1), chunks[1]!])).reused).to.equal(0);
  });

  it("gives the root of any prefix of its leaves, as a LeanIMT of that prefix has it", async function () {
    const list = leaves(2 * CHUNK_LEAVES + 1);
    const tree = await LeanTree.build(list);
    const aroundPowers = Array.from({ length: 12 }, (_, k) => [(1 << k) - 1, 1 << k, (1 << k) + 1]).flat();
    const sizes = [...new Set([...Array.from({ length: 10 }, (_, i) => i), ...aroundPowers, list.length])].sort((a, b) => a - b);
    expect(sizes).to.include.members([CHUNK_LEAVES - 1, CHUNK_LEAVES, CHUNK_LEAVES + 1, 2 * CHUNK_LEAVES, list.length]);
    // One LeanIMT grown through the sizes: at each it is the LeanIMT of that prefix.
    const prefix = createLeanIMT();
    for (const size of sizes) {
      if (size > prefix.size) prefix.insertMany(list.slice(prefix.size, size));
      expect(tree.rootAt(size), `root of the first ${size} leaves`).to.equal(size === 0 ? 0n : prefix.root);
    }
    for (const outside of [-1, list.length + 1, 1.5]) expect(() => tree.rootAt(outside)).to.throw(RangeError);
    expect(LeanTree.empty().rootAt(0)).to.equal(0n);
  });

  it("packs leaves as 64 hex characters each and refuses a broken packing", function () {
    const list = [0n, 1n, (1n << 253n) + 7n];
    expect(packLeaves(list)).to.have.length(3 * 64);
    expect(unpackLeaves(packLeaves(list))).to.deep.equal(list);
    expect(() => unpackLeaves("ab")).to.throw(RangeError);
    expect(() => unpackLeaves("g".repeat(64))).to.throw(RangeError);
  });
});

describe("SyncedTree: an agent's tree fetched from an offset", function () {
  it("takes only the leaves after those it has, and hashes up to the quoted size, which may trail what it fetched", async function () {
    const all = leaves(1_200);
    const synced = new SyncedTree();
    for (const [size, quoted] of [[10, 9], [10, 10], [11, 11], [300, 250], [1_200, 1_200]] as const) {
      const slice = served(all.slice(0, size), synced.fetched);
      expect(slice.from).to.equal(synced.fetched);
      synced.receive(slice.from, slice.leaves);
      expect(synced.fetched).to.equal(size);
      expectSameTree(await synced.treeOf(quoted), all.slice(0, quoted));
    }
    expect(await synced.treeOf(1_201)).to.equal(undefined);
    // A slice that starts past the leaves held, or is not whole packed leaves, is refused (proveLocally: QUOTE_REFUSED).
    expect(() => synced.receive(1_201, "")).to.throw(RangeError);
    expect(() => synced.receive(1_200, "abc")).to.throw(RangeError);
  });

  it("across an ASP revocation: a tree rebuilt with more leaves does not give the served root from an offset; dropped and fetched whole, it does", async function () {
    const labels = leaves(20);
    const synced = new SyncedTree();
    synced.receive(0, served(labels, 0).leaves);
    // Label 7 revoked, two approved since: the served tree is longer than what the agent holds, so it is sliced.
    const rebuilt = [...labels.slice(0, 7), ...labels.slice(8), ...leaves(2, 1_000n)];
    const slice = served(rebuilt, synced.fetched);
    synced.receive(slice.from, slice.leaves);
    const stale = await synced.treeOf(rebuilt.length);
    expect(stale!.root).to.not.equal(slice.root); // the agent's root check refuses it: no path is taken from it
    synced.reset();
    const whole = served(rebuilt, synced.fetched);
    expect(whole.from).to.equal(0);
    synced.receive(whole.from, whole.leaves);
    expectSameTree(await synced.treeOf(rebuilt.length), rebuilt);
  });

  it("across a revocation that shortens the tree, or a reorg that replaced the newest leaves: served from 0, or caught by the root", async function () {
    const all = leaves(30);
    const synced = new SyncedTree();
    synced.receive(0, served(all, 0).leaves);
    await synced.treeOf(30);
    // Shorter than what the agent holds: the server starts from 0 and the agent starts again with it.
    const shorter = all.filter((_, i) => i !== 3).slice(0, 25);
    const fromZero = served(shorter, synced.fetched);
    expect(fromZero.from).to.equal(0);
    synced.receive(fromZero.from, fromZero.leaves);
    expectSameTree(await synced.treeOf(shorter.length), shorter);
    // A reorg replaced the last 5 leaves and added 3: the slice from the agent's offset gives another root.
    const reorged = [...shorter.slice(0, 20), ...leaves(8, 500n)];
    const slice = served(reorged, synced.fetched);
    synced.receive(slice.from, slice.leaves);
    expect((await synced.treeOf(reorged.length))!.root).to.not.equal(slice.root);
  });

  it("keeps its hashed tree through bytes (the agent's tree file) and goes on from there", async function () {
    const all = leaves(600);
    const synced = new SyncedTree();
    synced.receive(0, packLeaves(all.slice(0, 500)));
    await synced.treeOf(500);
    const { size, nodes } = synced.toBytes();
    const restarted = SyncedTree.fromBytes(size, nodes);
    expect(restarted.fetched).to.equal(500);
    restarted.receive(500, packLeaves(all.slice(500)));
    expectSameTree(await restarted.treeOf(600), all);
    expect(SyncedTree.fromBytes(size + 1, nodes).fetched).to.equal(0); // bytes of another size: start empty
  });
});
