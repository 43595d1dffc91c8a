import { FIELD_ELEMENT_BYTES as N8, type ProvingKey } from "./proving-key.js";

// The WebAssembly global, which this project's lib (ES2023, no DOM) does not declare: the part used here.
declare const WebAssembly: {
  Memory: new (descriptor: { initial: number }) => { readonly buffer: ArrayBuffer; grow(pages: number): number };
  Module: new (code: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> };
};

/** The multi-exponentiations of a Groth16 proof: over the witness (a, b1, b2, c) and over the quotient (h). */
export type MsmName = "a" | "b1" | "b2" | "c" | "h";
export type WitnessMsm = Exclude<MsmName, "h">;

type GroupName = "g1m" | "g2m";

interface BaseSet {
  group: GroupName;
  pointer: number;
  count: number;
}

/** Scalars are standard-form field elements, below 2^254. */
const SCALAR_BITS = 254;
/** Window width by log2 of the point count: ffjavascript's choice for the same wasm kernel. */
const WINDOW_BITS = [1, 1, 1, 1, 2, 3, 4, 5, 6, 7, 7, 8, 9, 10, 11, 12, 13, 13, 14, 15, 16, 16, 17, 17];
/** The engine gives its module 25 pages; its constants live at the bottom. */
const MODULE_PAGES = 25;
const WASM_PAGE = 65_536;

const COORDINATE_BYTES = { g1m: 32, g2m: 64 } as const;
const affineBytes = (group: GroupName) => 2 * COORDINATE_BYTES[group];
const jacobianBytes = (group: GroupName) => 3 * COORDINATE_BYTES[group];

const windowBitsFor = (count: number) => WINDOW_BITS[Math.floor(Math.log2(Math.max(count, 1)))]!;

/**
 * The heavy parts of a Groth16 proof (the quotient's FFTs and the multi-exponentiations) on a wasm instance of
 * the engine's code (the kernels snarkjs uses) whose memory holds the proving key for good: a job copies in only
 * its scalars, and nothing runs in JavaScript that snarkjs leaves there (building A, B, C; the FFT plumbing).
 *
 * Over the witness, bases whose scalars are equal are added first: this circuit's witness holds about 3,200
 * distinct values among 17,761 signals (the unused levels of both Merkle paths repeat the same hashes, and
 * most bits are 0 or 1), so each such multi-exponentiation runs over a fifth of the points. The quotient's
 * scalars are all distinct; its multi-exponentiation is cut into windows of bits, which workers share: the sum
 * of the window sums, each shifted by its bits, is the result.
 */
export class ProvingEngine {
  private readonly wasm: Record<string, (...args: number[]) => number>;
  private readonly u8: Uint8Array;
  private readonly sets: Record<MsmName, BaseSet>;
  private readonly key: ProvingKey;
  /** Regions past the bases: the QAP's coefficients and evaluations, scalars, grouped bases and their Jacobian sums, results. */
  private readonly at: {
    coefficients: number;
    evaluations: [number, number, number];
    cosetStep: number;
    one: number;
    scalars: number;
    grouped: number;
    sums: number;
    result: number;
    window: number;
  };

  /** `code`: the engine's wasm module. `cosetStep`: the Fr element (Montgomery form) that maps the domain onto its odd coset. */
  constructor(code: Uint8Array, key: ProvingKey, cosetStep: Uint8Array) {
    this.key = key;
    const points: Record<MsmName, [GroupName, Uint8Array]> = {
      a: ["g1m", key.pointsA],
      b1: ["g1m", key.pointsB1],
      b2: ["g2m", key.pointsB2],
      c: ["g1m", key.pointsC],
      h: ["g1m", key.pointsH],
    };
    const counts = Object.values(points).map(([group, bytes]) => bytes.byteLength / affineBytes(group));
    const maxCount = Math.max(...counts);
    const g2 = { affine: affineBytes("g2m"), jacobian: jacobianBytes("g2m") };
    const bases = Object.values(points).reduce((sum, [, bytes]) => sum + bytes.byteLength, 0);
    const domainBytes = key.domainSize * N8;
    const regions = bases + key.coefficients.byteLength + 3 * domainBytes + 2 * N8 + maxCount * (N8 + g2.affine + g2.jacobian) + 2 * g2.jacobian;
    // What the kernel allocates past our regions: its bucket table, or batchToAffine's n coordinates plus the
    // n + 1 running products of the batchInverse it calls.
    const kernelScratch = Math.max(...counts.map((count) => 2 ** windowBitsFor(count) * g2.jacobian), (2 * maxCount + 1) * COORDINATE_BYTES.g2m);

    const memory = new WebAssembly.Memory({ initial: MODULE_PAGES });
    const instance = new WebAssembly.Instance(new WebAssembly.Module(code), { env: { memory } });
    this.wasm = instance.exports as Record<string, (...args: number[]) => number>;
    // Address 0 holds the module's free-memory pointer: our regions start there, the kernel allocates past them.
    let free = new Uint32Array(memory.buffer)[0]!;
    memory.grow(Math.max(0, Math.ceil((free + regions + kernelScratch + 64 - memory.buffer.byteLength) / WASM_PAGE)));
    this.u8 = new Uint8Array(memory.buffer);
    const reserve = (bytes: number) => {
      free = Math.ceil(free / 8) * 8;
      free += bytes;
      return free - bytes;
    };
    const load = ([group, bytes]: [GroupName, Uint8Array]): BaseSet => {
      const pointer = reserve(bytes.byteLength);
      this.u8.set(bytes, pointer);
      return { group, pointer, count: bytes.byteLength / affineBytes(group) };
    };
    this.sets = { a: load(points.a), b1: load(points.b1), b2: load(points.b2), c: load(points.c), h: load(points.h) };
    const coefficients = reserve(key.coefficients.byteLength);
    this.u8.set(key.coefficients, coefficients);
    this.at = {
      coefficients,
      evaluations: [reserve(domainBytes), reserve(domainBytes), reserve(domainBytes)],
      cosetStep: reserve(N8),
      one: reserve(N8),
      scalars: reserve(maxCount * N8),
      grouped: reserve(maxCount * g2.affine),
      sums: reserve(maxCount * g2.jacobian),
      result: reserve(g2.jacobian),
      window: reserve(g2.jacobian),
    };
    new Uint32Array(memory.buffer)[0] = free;
    this.u8.set(cosetStep, this.at.cosetStep);
    this.wasm.frm_one!(this.at.one);
  }

  /**
   * The H scalars: A*B - C on the odd coset of the domain, from the QAP evaluations of the witness values
   * (snarkjs' buildABC, three inverse FFTs, coset shift, FFTs, joinABC), standard form.
   */
  quotient(witness: Uint8Array): Uint8Array {
    const { wasm, at, key } = this;
    const n = key.domainSize;
    this.u8.set(witness, at.scalars);
    const [a, b, c] = at.evaluations;
    wasm.qap_buildABC!(at.coefficients, key.coefficientCount, at.scalars, a, b, c, 0, n, 0, key.nVars);
    for (const evaluations of at.evaluations) {
      wasm.frm_ifft!(evaluations, n);
      wasm.frm_batchApplyKey!(evaluations, n, at.one, at.cosetStep, evaluations);
      wasm.frm_fft!(evaluations, n);
    }
    wasm.qap_joinABC!(a, b, c, n, a);
    wasm.frm_batchFromMontgomery!(a, n, a);
    return this.u8.slice(a, a + n * N8);
  }

  /** Windows of the quotient's multi-exponentiation: the unit of work sumWindows shares out. */
  get quotientWindows(): number {
    return Math.ceil(SCALAR_BITS / windowBitsFor(this.sets.h.count));
  }

  /**
   * Sum of scalar_i * base_i over a witness multi-exponentiation, as a Jacobian point. `scalars`: 32-byte
   * standard-form scalars, one per base (for c, the witness without the constant and the public signals).
   */
  sumWitness(msm: WitnessMsm, scalars: Uint8Array): Uint8Array {
    const set = this.sets[msm];
    const grouped = this.groupEqualScalars(set, scalars);
    return this.sum(grouped, 0, Math.ceil(SCALAR_BITS / windowBitsFor(grouped.count)));
  }

  /** Windows first..last-1 of the quotient's multi-exponentiation, each shifted to its bits: a Jacobian point. */
  sumWindows(scalars: Uint8Array, first: number, last: number): Uint8Array {
    const set = this.sets.h;
    this.checkLength(set, scalars);
    this.u8.set(scalars, this.at.scalars);
    return this.sum(set, first, last);
  }

  private checkLength({ count }: BaseSet, scalars: Uint8Array): void {
    if (scalars.byteLength !== count * N8) throw new Error(`expected ${count} scalars, got ${scalars.byteLength / N8}`);
  }

  /**
   * Adds the bases of equal scalars, leaving in memory one base per distinct non-zero scalar (the affine sum)
   * and those scalars; answers the set they make.
   */
  private groupEqualScalars(set: BaseSet, scalars: Uint8Array): BaseSet {
    this.checkLength(set, scalars);
    const { group, pointer, count } = set;
    const { u8, at } = this;
    const groupOf = new Map<string, number>();
    const bytes = Buffer.from(scalars.buffer, scalars.byteOffset, scalars.byteLength);
    const zero = this.wasm[`${group}_zero`]!;
    const addMixed = this.wasm[`${group}_addMixed`]!;
    for (let i = 0; i < count; i++) {
      const key = bytes.toString("latin1", i * N8, (i + 1) * N8);
      let index = groupOf.get(key);
      if (index === undefined) {
        if (isZeroScalar(scalars, i)) continue;
        index = groupOf.size;
        groupOf.set(key, index);
        u8.set(scalars.subarray(i * N8, (i + 1) * N8), at.scalars + index * N8);
        zero(at.sums + index * jacobianBytes(group));
      }
      const sum = at.sums + index * jacobianBytes(group);
      addMixed(sum, pointer + i * affineBytes(group), sum);
    }
    this.wasm[`${group}_batchToAffine`]!(at.sums, groupOf.size, at.grouped);
    return { group, pointer: at.grouped, count: groupOf.size };
  }

  /** Windows first..last-1 of the multi-exponentiation of `set` by the scalars in memory, Horner-style. */
  private sum({ group, pointer, count }: BaseSet, first: number, last: number): Uint8Array {
    const { wasm, at } = this;
    const windowBits = windowBitsFor(count);
    const double = wasm[`${group}_double`]!;
    const add = wasm[`${group}_add`]!;
    wasm[`${group}_zero`]!(at.result);
    for (let index = last - 1; index >= first; index--) {
      if (index < last - 1) for (let bit = 0; bit < windowBits; bit++) double(at.result, at.result);
      const startBit = index * windowBits;
      wasm[`${group}_multiexpAffine_chunk`]!(pointer, at.scalars, N8, count, startBit, Math.min(windowBits, SCALAR_BITS - startBit), at.window);
      add(at.result, at.window, at.result);
    }
    for (let bit = 0; bit < first * windowBits; bit++) double(at.result, at.result);
    return this.u8.slice(at.result, at.result + jacobianBytes(group));
  }
}

function isZeroScalar(scalars: Uint8Array, index: number): boolean {
  for (let byte = index * N8; byte < (index + 1) * N8; byte++) if (scalars[byte] !== 0) return false;
  return true;
}
