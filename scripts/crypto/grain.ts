// The Grain LFSR that the Poseidon and Poseidon2 reference scripts (generate_parameters_grain.sage and
// HorizenLabs' poseidon2_rust_params.sage) draw round constants from. Deriving the constants here, instead of
// copying a table, lets a test check the derivation against a table we did not produce (circomlib's Poseidon).

/** What the reference scripts seed the LFSR with: the instance's description. */
export interface GrainInstance {
  /** 1 for a prime field (0 would be GF(2^n)). */
  field: 0 | 1;
  /** 0 for the S-box x^alpha (1 would be x^-1). */
  sbox: 0 | 1;
  /** Field size in bits. */
  n: number;
  /** State width. */
  t: number;
  /** Full (external) rounds. */
  roundsF: number;
  /** Partial (internal) rounds. */
  roundsP: number;
}

/** The 80-bit seed: field (2 bits), sbox (4), n (12), t (12), R_F (10), R_P (10), then 30 ones; MSB first. */
function seed({ field, sbox, n, t, roundsF, roundsP }: GrainInstance): number[] {
  const bits = (value: number, width: number) => [...value.toString(2).padStart(width, "0")].map(Number);
  return [...bits(field, 2), ...bits(sbox, 4), ...bits(n, 12), ...bits(t, 12), ...bits(roundsF, 10), ...bits(roundsP, 10), ...Array<number>(30).fill(1)];
}

/**
 * The reference's output bits: b_{i+80} = b_{i+62} ^ b_{i+51} ^ b_{i+38} ^ b_{i+23} ^ b_{i+13} ^ b_i, the first 160
 * discarded; then bits are read in pairs and the second of a pair is kept only when the first is 1.
 */
function* grainBits(instance: GrainInstance): Generator<number, never> {
  // A ring buffer of the last 80 bits: position i holds b_{k + i} for the current offset k.
  const state = seed(instance);
  let head = 0;
  const step = () => {
    const at = (i: number) => state[(head + i) % 80]!;
    const bit = at(62) ^ at(51) ^ at(38) ^ at(23) ^ at(13) ^ at(0);
    state[head] = bit;
    head = (head + 1) % 80;
    return bit;
  };
  for (let i = 0; i < 160; i++) step();
  for (;;) {
    const keep = step();
    const bit = step();
    if (keep === 1) yield bit;
  }
}

/**
 * The first `count` round constants the reference scripts draw for a prime field: `n`-bit big-endian integers,
 * each one that is not below `prime` rejected and drawn again.
 */
export function grainFieldElements(instance: GrainInstance, prime: bigint, count: number): bigint[] {
  const bits = grainBits(instance);
  const out: bigint[] = [];
  while (out.length < count) {
    let digits = "0b";
    for (let i = 0; i < instance.n; i++) digits += bits.next().value;
    const x = BigInt(digits);
    if (x < prime) out.push(x);
  }
  return out;
}
