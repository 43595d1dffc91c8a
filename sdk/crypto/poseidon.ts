import { poseidon1, poseidon2, poseidon3 } from "poseidon-lite";

// circomlib-compatible Poseidon over BN254, the same function as the circuit's Poseidon(n) and the
// poseidon-solidity libraries the contracts use.
export const hash1 = (a: bigint): bigint => poseidon1([a]);
export const hash2 = (a: bigint, b: bigint): bigint => poseidon2([a, b]);
export const hash3 = (a: bigint, b: bigint, c: bigint): bigint => poseidon3([a, b, c]);
