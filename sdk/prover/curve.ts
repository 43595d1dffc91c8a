import * as snarkjs from "snarkjs";

/** A field element or point in the engine's internal (Montgomery) byte form. */
export type Element = Uint8Array;

/** The scalar field Fr of ffjavascript's bn128 engine, as the Groth16 prover uses it. */
export interface ScalarField {
  /** 2-adicity: the largest power of two dividing r - 1. */
  s: number;
  /** Generator of the coset the quotient is evaluated on when the domain is 2^s. */
  shift: Element;
  /** w[k] is a primitive 2^k-th root of unity. */
  w: Element[];
  random(): Element;
  neg(a: Element): Element;
  mul(a: Element, b: Element): Element;
}

/** G1 or G2 of the engine. Points of the zkey are affine, sums are Jacobian; both are accepted. */
export interface Group {
  add(a: Element, b: Element): Element;
  timesFr(point: Element, scalar: Element): Element;
  toAffine(point: Element): Element;
  /** Coordinates as bigints (G2: pairs of bigints), the form snarkjs stringifies into a proof. */
  toObject(point: Element): unknown[];
}

/** ffjavascript's bn128 engine: field and curve arithmetic compiled to wasm (wasmcurves). */
export interface Bn128 {
  Fr: ScalarField;
  G1: Group;
  G2: Group;
  /** The engine's wasm module, to instantiate again with memory of our own. */
  tm: { code: Uint8Array };
}

const getCurveFromName = snarkjs.curves.getCurveFromName as (name: string, options: { singleThread: boolean }) => Promise<unknown>;

/**
 * The engine snarkjs proves with, single-threaded: inside a worker thread ffjavascript cannot start threads of
 * its own, so the prover spreads a proof over its worker threads itself.
 */
export async function loadBn128(): Promise<Bn128> {
  return (await getCurveFromName("bn128", { singleThread: true })) as Bn128;
}

/** The element that moves the domain of size 2^power onto the odd coset the quotient is evaluated on. */
export function cosetStep(Fr: ScalarField, power: number): Element {
  return power === Fr.s ? Fr.shift : Fr.w[power + 1]!;
}
