import { readSections, section } from "./bin-file.js";
import type { Element } from "./curve.js";

/** Section ids of a Groth16 .zkey (snarkjs' zkey format). */
const ZKEY_SECTION = { protocol: 1, header: 2, coefficients: 4, pointsA: 5, pointsB1: 6, pointsB2: 7, pointsC: 8, pointsH: 9 };
const GROTH16_PROTOCOL = 1;

/** Bytes of a bn128 field element (and of a scalar or witness value): 32, little-endian. */
export const FIELD_ELEMENT_BYTES = 32;

/**
 * A Groth16 proving key held in memory: the header the prover combines with, and the sections it takes the
 * multi-exponentiations over, as views into the one buffer the .zkey was read into.
 */
export interface ProvingKey {
  /** Signals in the witness, the constant 1 included. */
  nVars: number;
  /** Public signals; they follow the constant 1 in the witness. */
  nPublic: number;
  /** Size of the evaluation domain, a power of two at least the number of constraints. */
  domainSize: number;
  alpha1: Element;
  beta1: Element;
  beta2: Element;
  delta1: Element;
  delta2: Element;
  /** Number of entries in `coefficients`. */
  coefficientCount: number;
  /** Non-zero entries of the A and B matrices: `matrix u32, constraint u32, signal u32, value` each. */
  coefficients: Uint8Array;
  pointsA: Uint8Array;
  pointsB1: Uint8Array;
  pointsB2: Uint8Array;
  pointsC: Uint8Array;
  pointsH: Uint8Array;
}

/** Parses a bn128 Groth16 .zkey. Points stay in the file's little-endian Montgomery form, which the engine uses as is. */
export function readProvingKey(zkey: Uint8Array): ProvingKey {
  const sections = readSections(zkey, "zkey");
  const protocol = section(sections, ZKEY_SECTION.protocol);
  if (new DataView(protocol.buffer, protocol.byteOffset).getUint32(0, true) !== GROTH16_PROTOCOL) {
    throw new Error("the zkey is not a Groth16 key");
  }

  const header = section(sections, ZKEY_SECTION.header);
  const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
  let offset = 0;
  const u32 = () => {
    offset += 4;
    return view.getUint32(offset - 4, true);
  };
  const bytes = (length: number) => {
    offset += length;
    return header.slice(offset - length, offset);
  };
  const n8q = u32();
  bytes(n8q); // q
  const n8r = u32();
  bytes(n8r); // r
  // The engine is bn128's: a key on another curve (other field sizes) would give proofs that never verify.
  if (n8q !== FIELD_ELEMENT_BYTES || n8r !== FIELD_ELEMENT_BYTES) throw new Error("the zkey is not a bn128 key");
  const nVars = u32();
  const nPublic = u32();
  const domainSize = u32();
  const g1 = () => bytes(2 * n8q);
  const g2 = () => bytes(4 * n8q);
  const alpha1 = g1();
  const beta1 = g1();
  const beta2 = g2();
  g2(); // gamma2: only the verifier needs it
  const delta1 = g1();
  const delta2 = g2();

  const coefficientSection = section(sections, ZKEY_SECTION.coefficients);
  return {
    nVars,
    nPublic,
    domainSize,
    alpha1,
    beta1,
    beta2,
    delta1,
    delta2,
    coefficientCount: new DataView(coefficientSection.buffer, coefficientSection.byteOffset).getUint32(0, true),
    coefficients: coefficientSection.subarray(4),
    pointsA: section(sections, ZKEY_SECTION.pointsA),
    pointsB1: section(sections, ZKEY_SECTION.pointsB1),
    pointsB2: section(sections, ZKEY_SECTION.pointsB2),
    pointsC: section(sections, ZKEY_SECTION.pointsC),
    pointsH: section(sections, ZKEY_SECTION.pointsH),
  };
}
