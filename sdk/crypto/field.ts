/** Order of the BN254 scalar field: every circuit signal and tree node is an element of it. */
export const SNARK_SCALAR_FIELD =
  21888242871839275222246405745257275088548364400416034343698204186575808495617n;

/** Notes hold values below 2^128 (the circuit range-checks 128 bits). */
export const NOTE_VALUE_LIMIT = 1n << 128n;

export function isFieldElement(x: bigint): boolean {
  return x >= 0n && x < SNARK_SCALAR_FIELD;
}

/** Throws a RangeError naming `name` when `x` is not an element of the scalar field. */
export function assertFieldElement(x: bigint, name: string): void {
  if (!isFieldElement(x)) {
    throw new RangeError(`${name} must be an element of the BN254 scalar field (0 <= x < field order)`);
  }
}
