// tsx contracts/lib/poseidon/generate-poseidon2.ts
//
// Writes Poseidon2T3.sol next to this file: Poseidon2 over BN254 with t = 3 (sdk/crypto/poseidon2.ts, whose
// constants it takes), as the 2-to-1 compression the Merkle tree hashes its nodes with. Poseidon2's linear layers
// are additions only, so the words are left unreduced wherever their sums stay below 2^256 and only the S-boxes
// (mulmod) and two words per internal round (addmod) reduce. The script tracks an upper bound of every word as it
// writes the Yul and refuses to write a sum that could pass 2^256; it checks its model against the TypeScript hash
// before writing.
import { writeFileSync } from "node:fs";
import { SNARK_SCALAR_FIELD as F } from "../../../sdk/crypto/field.js";
import { POSEIDON2_T3_CONSTANTS } from "../../../sdk/crypto/poseidon2-constants.js";
import { poseidon2Hash2 } from "../../../sdk/crypto/poseidon2.js";

const WORD = 1n << 256n;
const { externalInitial, internal, externalFinal } = POSEIDON2_T3_CONSTANTS;

/** A Yul expression, its value for the inputs being modelled, and an exclusive upper bound on its value for any input. */
interface Expr { yul: string; value: bigint; bound: bigint }

const hex = (x: bigint) => `0x${x.toString(16).padStart(64, "0")}`;
const constant = (c: bigint): Expr => ({ yul: hex(c), value: c, bound: c + 1n });
function add(a: Expr, b: Expr): Expr {
  const bound = a.bound + b.bound - 1n;
  if (bound > WORD) throw new Error(`add(${a.yul.slice(0, 20)}, ...) could overflow`);
  return { yul: `add(${a.yul}, ${b.yul})`, value: a.value + b.value, bound };
}
const addmod = (a: Expr, b: Expr): Expr => ({ yul: `addmod(${a.yul}, ${b.yul}, F)`, value: (a.value + b.value) % F, bound: F });
const mulmod = (a: Expr, b: Expr): Expr => ({ yul: `mulmod(${a.yul}, ${b.yul}, F)`, value: (a.value * b.value) % F, bound: F });
const mod = (a: Expr): Expr => ({ yul: `mod(${a.yul}, F)`, value: a.value % F, bound: F });

/** Straight-line Yul over a few variables; each variable's value and bound follow the assignments. */
class Writer {
  readonly lines: string[] = [];
  private readonly vars = new Map<string, Expr>();
  let(name: string, e: Expr): Expr { return this.set(name, e, "let "); }
  assign(name: string, e: Expr): Expr { return this.set(name, e, ""); }
  get(name: string): Expr { return this.vars.get(name)!; }
  private set(name: string, e: Expr, keyword: string): Expr {
    this.lines.push(`${keyword}${name} := ${e.yul}`);
    const v = { yul: name, value: e.value, bound: e.bound };
    this.vars.set(name, v);
    return v;
  }
}

/**
 * One hash of (left, right), modelled for those inputs. The state lives in s0, s1, s2; each round computes in a
 * block of its own fresh variables (t the S-box input, q its square, y the S-box output), the form in which the
 * legacy code generator wastes the fewest stack operations.
 */
function hashYul(left: bigint, right: bigint): { lines: string[]; value: bigint } {
  const w = new Writer();
  const block = (body: () => void) => {
    w.lines.push("{");
    body();
    w.lines.push("}");
  };
  // y_i := (s_i + c)^5 as t * (t^2)^2.
  const sbox = (i: number, c: bigint): Expr => {
    const t = w.let(`t${i}`, add(w.get(`s${i}`), constant(c)));
    const q = w.let(`q${i}`, mulmod(t, t));
    return w.let(`y${i}`, mulmod(mulmod(q, q), t));
  };
  // External round: S-box all words, then s_i := y_i + sum. `reduce` leaves s1 and s2 below p for the internal rounds.
  const externalRound = (c: readonly bigint[], reduce = false) =>
    block(() => {
      const y = [0, 1, 2].map((i) => sbox(i, c[i]!));
      const sum = w.let("sum", add(add(y[0]!, y[1]!), y[2]!));
      w.assign("s0", add(y[0]!, sum));
      w.assign("s1", reduce ? addmod(y[1]!, sum) : add(y[1]!, sum));
      w.assign("s2", reduce ? addmod(y[2]!, sum) : add(y[2]!, sum));
    });
  // Internal round: s0 := y0, then [[2,1,1],[1,2,1],[1,1,3]], that is s_i := d_i s_i + sum with d = (1, 1, 2).
  // s1 and s2 at least double each round, so they are reduced, except s1 after the last round (the next constant fits).
  const internalRound = (c: bigint, last: boolean) =>
    block(() => {
      const y = sbox(0, c);
      const [s1, s2] = [w.get("s1"), w.get("s2")];
      const sum = w.let("sum", add(add(y, s1), s2));
      w.assign("s1", last ? add(s1, sum) : addmod(s1, sum));
      w.assign("s2", addmod(add(s2, s2), sum));
      w.assign("s0", add(y, sum));
    });

  // Inputs reduced mod p, then the initial external linear layer on [left, right, 0]: s_i += left + right.
  const input = (name: string, value: bigint): Expr => ({ yul: name, value, bound: WORD });
  const [l, r] = [w.let("s0", mod(input("left", left))), w.let("s1", mod(input("right", right)))];
  const s2 = w.let("s2", add(l, r));
  w.assign("s0", add(l, s2));
  w.assign("s1", add(r, s2));

  externalInitial.forEach((c, i) => externalRound(c, i === externalInitial.length - 1));
  internal.forEach((c, i) => internalRound(c, i === internal.length - 1));
  externalFinal.slice(0, -1).forEach((c) => externalRound(c));
  // The last round's output word only: 2 y0 + y1 + y2.
  let out = constant(0n);
  block(() => {
    const y = [0, 1, 2].map((i) => sbox(i, externalFinal.at(-1)![i]!));
    out = w.assign("result", mod(add(add(add(y[0]!, y[0]!), y[1]!), y[2]!)));
  });
  return { lines: w.lines, value: out.value };
}

function library(lines: string[]): string {
  let depth = 3;
  const indent = (line: string) => {
    if (line === "}") depth--;
    const out = `${"    ".repeat(depth)}${line}`;
    if (line === "{") depth++;
    return out;
  };
  const body = lines.map(indent).join("\n");
  return `// SPDX-License-Identifier: MIT
// Generated by contracts/lib/poseidon/generate-poseidon2.ts from sdk/crypto/poseidon2-constants.ts; do not edit.
pragma solidity 0.8.28;

/// @title Poseidon2T3
/// @notice Poseidon2 over BN254 with t = 3 (S-box x^5, 8 external and 56 internal rounds; HorizenLabs'
///         poseidon2_instance_bn256.rs) as a 2-to-1 compression: the first word of the permutation of
///         [left, right, 0], sdk/crypto/poseidon2.ts's poseidon2Hash2 and circuits/poseidon2.circom's
///         Poseidon2Hash2. Internal, so it inlines into its caller: no call, no argument copies. About 9.9k gas a
///         hash compiled as the pool is (legacy pipeline, 1e6 runs); the linked PoseidonT3 takes 13.8k.
library Poseidon2T3 {
    /// @notice Hashes two words, each reduced mod p first (as PoseidonT3 does): a word and that word plus p hash
    ///         alike, so callers that must tell them apart check their inputs are field elements.
    function hash(uint256 left, uint256 right) internal pure returns (uint256 result) {
        assembly ("memory-safe") {
            let F := ${F}
${body}
        }
    }
}
`;
}

for (const [left, right] of [[0n, 0n], [1n, 2n], [F - 1n, F - 1n], [F - 2n, 12345n]] as const) {
  if (hashYul(left, right).value !== poseidon2Hash2(left, right)) {
    throw new Error(`the Yul model disagrees with poseidon2Hash2 on (${left}, ${right})`);
  }
}
writeFileSync(new URL("./Poseidon2T3.sol", import.meta.url), library(hashYul(0n, 0n).lines));
console.log("wrote Poseidon2T3.sol");
