// tsx contracts/lib/poseidon/generate.ts
//
// Writes PoseidonT3.sol and PoseidonT4.sol next to this file: circomlib's Poseidon (the circuit's hash) for 2 and 3
// inputs in the optimized form circomlib's poseidon.circom computes, whose partial rounds mix with a sparse matrix
// (the first row and column only, 2t - 1 products) instead of the full t x t one. The constants are circomlib's own
// (circuits/poseidon_constants.circom). The script checks its reference model against poseidon-lite before writing.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { poseidon2, poseidon3 } from "poseidon-lite";

const F = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;
const ROUNDS_F = 8;
const ROUNDS_P: Record<number, number> = { 3: 57, 4: 56 };
const REDUCE_EVERY = 4;
const constantsFile = createRequire(import.meta.url).resolve("circomlib/circuits/poseidon_constants.circom");
const circom = readFileSync(constantsFile, "utf8");

/** The hex numbers of `POSEIDON_<name>(t)`'s branch for `t`, in order. */
function constants(name: string, t: number): bigint[] {
  const body = circom.slice(circom.indexOf(`function POSEIDON_${name}(t)`));
  const branch = body.slice(body.indexOf(`t==${t})`), body.indexOf(`t==${t + 1})`));
  return [...branch.matchAll(/0x[0-9a-f]+/g)].map(([hex]) => BigInt(hex));
}

interface Params { t: number; C: bigint[]; S: bigint[]; M: bigint[][]; P: bigint[][] }

function params(t: number): Params {
  const square = (flat: bigint[]) => Array.from({ length: t }, (_, i) => flat.slice(i * t, (i + 1) * t));
  return { t, C: constants("C", t), S: constants("S", t), M: square(constants("M", t)), P: square(constants("P", t)) };
}

const pow5 = (x: bigint) => (x * x % F) ** 2n % F * x % F;
const mix = (state: bigint[], M: bigint[][]) => state.map((_, i) => state.reduce((acc, x, j) => (acc + M[j]![i]! * x) % F, 0n));

/** The reference model, circomlib's PoseidonEx with one output. */
function model({ t, C, S, M, P }: Params, inputs: bigint[]): bigint {
  const half = ROUNDS_F / 2;
  let state = [0n, ...inputs].map((x, i) => (x + C[i]!) % F);
  for (let r = 0; r < half; r++) {
    state = state.map((x, i) => (pow5(x) + C[(r + 1) * t + i]!) % F);
    state = mix(state, r === half - 1 ? P : M);
  }
  for (let r = 0; r < ROUNDS_P[t]!; r++) {
    const s = S.slice((2 * t - 1) * r);
    const first = (pow5(state[0]!) + C[(half + 1) * t + r]!) % F;
    state = [first, ...state.slice(1)];
    const next0 = state.reduce((acc, x, j) => (acc + s[j]! * x) % F, 0n);
    state = [next0, ...state.slice(1).map((x, k) => (x + first * s[t + k]!) % F)];
  }
  for (let r = 0; r < half - 1; r++) {
    state = state.map((x, i) => (pow5(x) + C[(half + 1) * t + ROUNDS_P[t]! + r * t + i]!) % F);
    state = mix(state, M);
  }
  return mix(state.map(pow5), M)[0]!;
}

const hex = (x: bigint) => `0x${x.toString(16).padStart(64, "0")}`;

/** Yul for one hash. Words are reduced mod F only where they could otherwise pass 5F (< 2^256); mulmod takes any. */
function yul({ t, C, S, M, P }: Params): string[] {
  const half = ROUNDS_F / 2;
  const idx = [...Array(t).keys()];
  const sum = (terms: string[]) => terms.reduce((a, b) => `add(${a}, ${b})`);
  // s_i := s_i^5 + c, through x := s_i^2.
  const pow5Plus = (i: number, c: bigint) => [`x := mulmod(s${i}, s${i}, F)`, `s${i} := add(mulmod(mulmod(x, x, F), s${i}, F), ${hex(c)})`];
  // A full round's mix, n_i = sum_j m[j][i] s_j, inline: n_0 goes to x, the last row straight to its word (no
  // other row reads it after), the rows between to block-scoped variables.
  const lines = [`let F := ${F}`, "let x := 0"];
  const row = (m: bigint[][], i: number) => sum(idx.map((j) => `mulmod(s${j}, ${hex(m[j]![i]!)}, F)`));
  const fullRound = (constantsAt: number, m: bigint[][]) => {
    // The capacity word starts as the constant C[0], so its first S-box is computed here, not on chain.
    idx.forEach((i) => lines.push(...(constantsAt === t && i === 0 ? [] : pow5Plus(i, C[constantsAt + i]!))));
    const between = idx.slice(1, t - 1);
    lines.push(
      "{",
      `    x := ${row(m, 0)}`,
      ...between.map((i) => `    let n${i} := ${row(m, i)}`),
      `    s${t - 1} := ${row(m, t - 1)}`,
      "    s0 := x",
      ...between.map((i) => `    s${i} := n${i}`),
      "}",
    );
  };
  lines.push(`let s0 := ${hex((pow5(C[0]!) + C[t]!) % F)}`);
  for (let i = 1; i < t; i++) lines.push(`let s${i} := add(mod(in${i - 1}, F), ${hex(C[i]!)})`);
  for (let r = 0; r < half; r++) fullRound((r + 1) * t, r === half - 1 ? P : M);
  // Partial rounds: s0 and x trade places each round (the new s0 is written where the temporary was), which
  // saves copying it back.
  let [first, spare] = ["s0", "x"];
  for (let r = 0; r < ROUNDS_P[t]!; r++) {
    // Sparse mix: s0 := sum_j S[j] s_j, s_k += s0 S[t + k - 1] (the old s0).
    const s = S.slice((2 * t - 1) * r);
    const state = (j: number) => (j === 0 ? first : `s${j}`);
    lines.push(
      `${spare} := mulmod(${first}, ${first}, F)`,
      `${first} := add(mulmod(mulmod(${spare}, ${spare}, F), ${first}, F), ${hex(C[(half + 1) * t + r]!)})`,
      `${spare} := ${sum(idx.map((j) => `mulmod(${state(j)}, ${hex(s[j]!)}, F)`))}`,
    );
    // s_k reduces every REDUCE_EVERY rounds, from below 4F (a full round's mix) to below F, and otherwise grows by
    // under F a round: it stays below 5F < 2^256.
    const plus = r % REDUCE_EVERY === 0 ? (a: string, b: string) => `addmod(${a}, ${b}, F)` : (a: string, b: string) => `add(${a}, ${b})`;
    for (let k = 1; k < t; k++) lines.push(`s${k} := ${plus(`s${k}`, `mulmod(${first}, ${hex(s[t + k - 1]!)}, F)`)}`);
    [first, spare] = [spare, first];
  }
  if (first !== "s0") lines.push(`s0 := ${first}`);
  for (let r = 0; r < half - 1; r++) fullRound((half + 1) * t + ROUNDS_P[t]! + r * t, M);
  idx.forEach((i) => lines.push(`x := mulmod(s${i}, s${i}, F)`, `s${i} := mulmod(mulmod(x, x, F), s${i}, F)`));
  lines.push(`mstore(0, mod(${sum(idx.map((j) => `mulmod(s${j}, ${hex(M[j]![0]!)}, F)`))}, F))`, "return(0, 0x20)");
  return lines;
}

function library(p: Params): string {
  const n = p.t - 1;
  const body = yul(p).map((line) => `            ${line}`).join("\n");
  return `// SPDX-License-Identifier: MIT
// Generated by contracts/lib/poseidon/generate.ts from circomlib's constants; do not edit.
pragma solidity 0.8.28;

/// @title PoseidonT${p.t}
/// @notice circomlib's Poseidon of ${n} inputs over BN254, the circuit's Poseidon(${n}), in the optimized form (sparse
///         partial-round mixing). Linked, not inlined. The inputs are words, not poseidon-solidity's memory array:
///         neither side then copies one.
library PoseidonT${p.t} {
    function hash(${[...Array(n).keys()].map((i) => `uint256 in${i}`).join(", ")}) public pure returns (uint256) {
        assembly {
${body}
        }
    }
}
`;
}

const reference: Record<number, (inputs: bigint[]) => bigint> = { 3: poseidon2, 4: poseidon3 };
for (const t of [3, 4]) {
  const p = params(t);
  for (const inputs of [[1n, 2n, 3n], [0n, 0n, 0n], [F - 1n, 12345n, F - 2n]]) {
    const input = inputs.slice(0, t - 1);
    if (model(p, input) !== reference[t]!(input)) throw new Error(`the optimized model of t = ${t} disagrees with poseidon-lite`);
  }
  writeFileSync(new URL(`./PoseidonT${t}.sol`, import.meta.url), library(p));
  console.log(`wrote PoseidonT${t}.sol`);
}
