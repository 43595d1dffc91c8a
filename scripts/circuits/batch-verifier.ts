// tsx scripts/circuits/batch-verifier.ts   (npm run circuits:batch-verifier; `npm run circuits:setup` runs it too)
//
// Writes contracts/verifiers/WithdrawalBatchVerifier.sol: a verifier of k Groth16 proofs of the withdrawal circuit
// in one pairing check of k + 3 pairs (a random linear combination of the k single checks), for batch relays. Every
// constant, and the number of public inputs, comes from the verification key; the proofs are ProofLib's
// WithdrawProof, whose pubSignals length must match the key's nPublic (checked here, so a circuit change that
// forgets ProofLib fails at generation instead of at the first verification).
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { WITHDRAW_ARTIFACTS } from "../../sdk/circuit/artifacts.js";
import { SNARK_SCALAR_FIELD } from "../../sdk/crypto/field.js";
import { REPO_ROOT } from "./compile.js";

export const BATCH_VERIFIER_PATH = path.join(REPO_ROOT, "contracts", "verifiers", "WithdrawalBatchVerifier.sol");
const PROOF_LIB_PATH = path.join(REPO_ROOT, "contracts", "lib", "ProofLib.sol");

/** BN254's base field: point coordinates are below it. */
const P = 21888242871839275222246405745257275088696311157297823662689037894645226208583n;
/** BN254's group order: scalars and public inputs are below it. */
const R = SNARK_SCALAR_FIELD;

type G1 = readonly [x: bigint, y: bigint];
/** A G2 point in the pairing precompile's order (EIP-197): x.c1, x.c0, y.c1, y.c0. */
type G2 = readonly [x1: bigint, x0: bigint, y1: bigint, y0: bigint];

interface BatchVerifierKey {
  nPublic: number;
  alpha: G1;
  beta: G2;
  gamma: G2;
  delta: G2;
  /** IC_0 .. IC_nPublic: vk_x(x) = IC_0 + sum_j x_j IC_(j+1). */
  ic: G1[];
}

function coordinate(value: unknown, what: string): bigint {
  if (typeof value !== "string" || !/^\d+$/.test(value)) throw new TypeError(`${what}: not a decimal coordinate`);
  const n = BigInt(value);
  if (n >= P) throw new RangeError(`${what}: not below the base field`);
  return n;
}

/** An affine G1 point of snarkjs' [x, y, "1"], checked to be on y^2 = x^3 + 3 (catches a mangled key). */
function g1(value: unknown, what: string): G1 {
  if (!Array.isArray(value) || value.length !== 3 || value[2] !== "1") throw new TypeError(`${what}: not an affine G1 point`);
  const [x, y] = [coordinate(value[0], `${what}.x`), coordinate(value[1], `${what}.y`)];
  if ((y * y - x * x * x - 3n) % P !== 0n) throw new RangeError(`${what}: not on the curve`);
  return [x, y];
}

/** An affine G2 point of snarkjs' [[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]], reordered for the precompile. */
function g2(value: unknown, what: string): G2 {
  const pair = (v: unknown) => Array.isArray(v) && v.length === 2;
  if (!Array.isArray(value) || value.length !== 3 || !value.every(pair) || value[2][0] !== "1" || value[2][1] !== "0") {
    throw new TypeError(`${what}: not an affine G2 point`);
  }
  const [[x0, x1], [y0, y1]] = value as [[unknown, unknown], [unknown, unknown]];
  return [coordinate(x1, `${what}.x.c1`), coordinate(x0, `${what}.x.c0`), coordinate(y1, `${what}.y.c1`), coordinate(y0, `${what}.y.c0`)];
}

/** The Groth16 BN254 verification key snarkjs exports (zkey export verificationkey), validated. */
export function parseVerificationKey(json: unknown): BatchVerifierKey {
  const vkey = json as Record<string, unknown>;
  if (vkey.protocol !== "groth16" || vkey.curve !== "bn128") throw new TypeError("not a Groth16 BN254 verification key");
  const { nPublic, IC } = vkey;
  if (typeof nPublic !== "number" || !Number.isInteger(nPublic) || nPublic < 1) throw new TypeError("nPublic: not a positive integer");
  if (!Array.isArray(IC) || IC.length !== nPublic + 1) throw new RangeError(`IC: expected ${nPublic + 1} points`);
  return {
    nPublic,
    alpha: g1(vkey.vk_alpha_1, "vk_alpha_1"),
    beta: g2(vkey.vk_beta_2, "vk_beta_2"),
    gamma: g2(vkey.vk_gamma_2, "vk_gamma_2"),
    delta: g2(vkey.vk_delta_2, "vk_delta_2"),
    ic: IC.map((point, j) => g1(point, `IC[${j}]`)),
  };
}

/** The length of ProofLib.WithdrawProof's pubSignals, read from its source. */
function proofLibSignalCount(source: string): number {
  const matches = [...source.matchAll(/uint256\[(\d+)\]\s+pubSignals\s*;/g)];
  if (matches.length !== 1) throw new Error("ProofLib.sol: expected one `uint256[N] pubSignals;` field");
  return Number(matches[0]![1]);
}

const hex = (n: number) => `0x${n.toString(16)}`;
/** `base + offset` in Yul, without a no-op add. */
const at = (base: string, offset: number) => (offset === 0 ? base : `add(${base}, ${hex(offset)})`);
const indent = (depth: number, lines: string[]) => lines.map((line) => (line ? `${" ".repeat(depth)}${line}` : "")).join("\n");

/** The WithdrawProof words before pubSignals: pA (2), pB (4), pC (2). */
const POINT_WORDS = 8;
const B_OFFSET = 0x40;
const C_OFFSET = 0xc0;
const SIGNALS_OFFSET = POINT_WORDS * 32;
/** One pairing-input pair: a G1 point (64 bytes), then a G2 point (128 bytes). */
const PAIR = 0xc0;

function constants(key: BatchVerifierKey): string[] {
  const g1Constants = (name: string, [x, y]: G1) => [
    `uint256 internal constant ${name}_X = ${x};`,
    `uint256 internal constant ${name}_Y = ${y};`,
  ];
  const g2Constants = (name: string, [x1, x0, y1, y0]: G2) => [
    `uint256 internal constant ${name}_X1 = ${x1};`,
    `uint256 internal constant ${name}_X0 = ${x0};`,
    `uint256 internal constant ${name}_Y1 = ${y1};`,
    `uint256 internal constant ${name}_Y0 = ${y0};`,
  ];
  return [
    "// BN254's base field (coordinates) and group order (scalars, public inputs).",
    `uint256 internal constant P = ${P};`,
    `uint256 internal constant R = ${R};`,
    "",
    "// The verification key; G2 coordinates in the pairing precompile's order (c1 before c0).",
    ...g1Constants("ALPHA", key.alpha),
    ...g2Constants("BETA", key.beta),
    ...g2Constants("GAMMA", key.gamma),
    ...g2Constants("DELTA", key.delta),
    ...key.ic.flatMap((point, j) => g1Constants(`IC${j}`, point)),
    "",
    "// Bytes of one ProofLib.WithdrawProof in calldata: pA, pB, pC, then the public signals.",
    `uint256 internal constant PROOF_SIZE = ${hex((POINT_WORDS + key.nPublic) * 32)};`,
  ];
}

/** Yul functions whose bodies depend on nPublic, unrolled. */
function signalFunctions(nPublic: number): string[] {
  const signals = Array.from({ length: nPublic }, (_, j) => ({ sum: at("sums", j * 32), signal: at("proof", SIGNALS_OFFSET + j * 32) }));
  return [
    "// Whether the proof's coordinates are below P and its public signals below R.",
    "function canonical(proof) -> ok {",
    "    ok := lt(calldataload(proof), P)",
    ...Array.from({ length: POINT_WORDS - 1 }, (_, w) => `    ok := and(ok, lt(calldataload(${at("proof", (w + 1) * 32)}), P))`),
    ...signals.map(({ signal }) => `    ok := and(ok, lt(calldataload(${signal}), R))`),
    "}",
    "",
    "// sums_j = x_0j: the first proof's weight is 1.",
    "function initSums(sums, proof) {",
    ...signals.map(({ sum, signal }) => `    mstore(${sum}, calldataload(${signal}))`),
    "}",
    "",
    "// sums_j += w * x_ij (mod R).",
    "function addSums(sums, proof, w) {",
    ...signals.map(({ sum, signal }) => `    mstore(${sum}, addmod(mload(${sum}), mulmod(w, calldataload(${signal}), R), R))`),
    "}",
  ];
}

/** Yul that leaves vk_x = s IC_0 + sum_j sums_j IC_(j+1) at `pair`. */
function combinedInputs(nPublic: number): string[] {
  return [
    "switch s",
    "case 1 {",
    "    mstore(pair, IC0_X)",
    "    mstore(add(pair, 0x20), IC0_Y)",
    "}",
    "default { g1Mul(mIn, pair, IC0_X, IC0_Y, s) }",
    ...Array.from({ length: nPublic }, (_, j) => `g1MulAcc(mIn, pair, IC${j + 1}_X, IC${j + 1}_Y, mload(${at("sums", j * 32)}))`),
  ];
}

const storeG2 = (name: string) => [
  `mstore(add(pair, 0x40), ${name}_X1)`,
  `mstore(add(pair, 0x60), ${name}_X0)`,
  `mstore(add(pair, 0x80), ${name}_Y1)`,
  `mstore(add(pair, 0xa0), ${name}_Y0)`,
];

function render(key: BatchVerifierKey): string {
  const { nPublic } = key;
  return `// SPDX-License-Identifier: MIT
// GENERATED by scripts/circuits/batch-verifier.ts from sdk/artifacts/withdraw.vkey.json. DO NOT EDIT.
// Regenerate with \`npm run circuits:batch-verifier\`; \`npm run circuits:setup\` regenerates it with new keys.
pragma solidity 0.8.28;

import {IWithdrawalBatchVerifier} from "../interfaces/IWithdrawalBatchVerifier.sol";
import {ProofLib} from "../lib/ProofLib.sol";

/// @title WithdrawalBatchVerifier
/// @notice Verifies k Groth16 proofs of the withdrawal circuit (${nPublic} public signals) with one pairing check of
///         k + 3 pairs instead of k checks of 4 pairs (IWithdrawalBatchVerifier).
/// @dev Proof i, (A_i, B_i, C_i) with public signals x_i, is valid when
///        T_i = e(-A_i, B_i) e(alpha, beta) e(vk_x(x_i), gamma) e(C_i, delta) = 1,  vk_x(x) = IC0 + sum_j x_j IC(j+1),
///      the check of snarkjs' WithdrawalVerifier. This contract checks prod_i T_i^(w_i) = 1, by bilinearity
///        prod_i e(-w_i A_i, B_i) e(s alpha, beta) e(s IC0 + sum_j S_j IC(j+1), gamma) e(sum_i w_i C_i, delta) = 1
///      with s = sum_i w_i and S_j = sum_i w_i x_ij (mod R): 2(k - 1) + nPublic + 2 scalar multiplications (nPublic
///      when k = 1, where s = 1) and one call to the pairing precompile.
///
///      Weights (Fiat-Shamir): w_0 = 1 and, for i >= 1, w_i = 1 + (keccak256(seed, i) mod (R - 1)), in [1, R - 1],
///      where seed = keccak256 of the batch's calldata (every proof's points and public signals, in order) and
///      (seed, i) are two 32-byte words. Soundness: G_T has prime order R, so T_i = g^(t_i) and the check holds iff
///      sum_i w_i t_i = 0 (mod R). Every t_i is fixed by bytes hashed into the seed, so no weight is known before
///      the proofs are. If some t_j != 0 with j >= 1, the other weights fixed, one value of w_j at most makes the
///      sum 0: hit with probability <= 6 / 2^256 < 2^-253 per batch tried (keccak as a random oracle; no residue
///      mod R - 1 has more than 6 preimages below 2^256). If t_0 alone is not 0, the sum is t_0 != 0. So a batch
///      with an invalid proof passes with probability below 2^-253 per attempt, Q attempts below Q * 2^-253.
///
///      Rejected before any precompile call: an empty batch, a public signal >= R (x and x + R would be the same
///      statement to the curve arithmetic) and a coordinate >= P (the precompiles refuse it only by failing, which
///      consumes the gas the call was given). A point off the curve, or a B outside G2's subgroup, makes a
///      precompile fail: the answer is false, after that call consumed its gas, as with snarkjs' verifier.
contract WithdrawalBatchVerifier is IWithdrawalBatchVerifier {
${indent(4, constants(key))}

    /// @inheritdoc IWithdrawalBatchVerifier
    function verifyProofs(ProofLib.WithdrawProof[] calldata proofs) external view returns (bool) {
        assembly {
            function fail() {
                mstore(0, 0)
                return(0, 0x20)
            }

            // dst = s (x, y); mIn is 0x80 bytes of scratch.
            function g1Mul(mIn, dst, x, y, s) {
                mstore(mIn, x)
                mstore(add(mIn, 0x20), y)
                mstore(add(mIn, 0x40), s)
                if iszero(staticcall(gas(), 0x07, mIn, 0x60, dst, 0x40)) { fail() }
            }

            // acc += s (x, y)
            function g1MulAcc(mIn, acc, x, y, s) {
                mstore(mIn, x)
                mstore(add(mIn, 0x20), y)
                mstore(add(mIn, 0x40), s)
                if iszero(staticcall(gas(), 0x07, mIn, 0x60, mIn, 0x40)) { fail() }
                mstore(add(mIn, 0x40), mload(acc))
                mstore(add(mIn, 0x60), mload(add(acc, 0x20)))
                if iszero(staticcall(gas(), 0x06, mIn, 0x80, acc, 0x40)) { fail() }
            }

${indent(12, signalFunctions(nPublic))}

            let k := proofs.length
            if iszero(k) { fail() }

            // Memory from the free memory pointer (the call ends in this block, so it is never handed back):
            // mIn, 0x80 bytes of precompile input; sums, ${nPublic} words of S_j; pairs, the pairing input of k + 3 pairs:
            // (-w_i A_i, B_i) for each proof, (s alpha, beta), (vk_x, gamma), (sum_i w_i C_i, delta). Before the
            // pairs are written, the same place holds the copy of the proofs that the seed hashes.
            let mIn := mload(0x40)
            let sums := add(mIn, 0x80)
            let pairs := add(sums, ${hex(nPublic * 32)})

            let seed := 0
            if gt(k, 1) {
                let size := mul(k, PROOF_SIZE)
                calldatacopy(pairs, proofs.offset, size)
                seed := keccak256(pairs, size)
            }

            // Proof 0, weight 1: -A_0 is A_0 with y negated; (0, 0), the point at infinity, stays itself.
            let proof := proofs.offset
            if iszero(canonical(proof)) { fail() }
            mstore(pairs, calldataload(proof))
            mstore(add(pairs, 0x20), mod(sub(P, calldataload(add(proof, 0x20))), P))
            calldatacopy(add(pairs, ${hex(B_OFFSET)}), add(proof, ${hex(B_OFFSET)}), 0x80)
            let cSum := add(pairs, mul(add(k, 2), ${hex(PAIR)}))
            calldatacopy(cSum, add(proof, ${hex(C_OFFSET)}), 0x40)
            initSums(sums, proof)
            let s := 1

            // w_i = 1 + (keccak256(seed, i) mod (R - 1)), hashed from the scratch words 0x00 and 0x20.
            mstore(0, seed)
            for { let i := 1 } lt(i, k) { i := add(i, 1) } {
                proof := add(proof, PROOF_SIZE)
                if iszero(canonical(proof)) { fail() }
                mstore(0x20, i)
                let w := add(mod(keccak256(0, 0x40), sub(R, 1)), 1)
                let pair := add(pairs, mul(i, ${hex(PAIR)}))
                // -w A_i = (R - w) A_i
                g1Mul(mIn, pair, calldataload(proof), calldataload(add(proof, 0x20)), sub(R, w))
                calldatacopy(add(pair, 0x40), add(proof, ${hex(B_OFFSET)}), 0x80)
                g1MulAcc(mIn, cSum, calldataload(add(proof, ${hex(C_OFFSET)})), calldataload(add(proof, ${hex(C_OFFSET + 32)})), w)
                addSums(sums, proof, w)
                s := addmod(s, w, R)
            }

            // (s alpha, beta)
            let pair := add(pairs, mul(k, ${hex(PAIR)}))
            switch s
            case 1 {
                mstore(pair, ALPHA_X)
                mstore(add(pair, 0x20), ALPHA_Y)
            }
            default { g1Mul(mIn, pair, ALPHA_X, ALPHA_Y, s) }
${indent(12, storeG2("BETA"))}

            // (vk_x, gamma)
            pair := add(pair, ${hex(PAIR)})
${indent(12, combinedInputs(nPublic))}
${indent(12, storeG2("GAMMA"))}

            // (sum_i w_i C_i, delta): the sum is in place already.
            pair := add(pair, ${hex(PAIR)})
${indent(12, storeG2("DELTA"))}

            let ok := staticcall(gas(), 0x08, pairs, mul(add(k, 3), ${hex(PAIR)}), 0, 0x20)
            mstore(0, and(ok, mload(0)))
            return(0, 0x20)
        }
    }
}
`;
}

/** The batch verifier for `vkeyPath`, checked against ProofLib's WithdrawProof. Deterministic for a given key. */
export async function generateBatchVerifier(
  vkeyPath: string = WITHDRAW_ARTIFACTS.vkey,
  proofLibPath: string = PROOF_LIB_PATH,
): Promise<string> {
  const key = parseVerificationKey(JSON.parse(await readFile(vkeyPath, "utf8")));
  const signals = proofLibSignalCount(await readFile(proofLibPath, "utf8"));
  if (signals !== key.nPublic) {
    throw new Error(`ProofLib.WithdrawProof has ${signals} public signals, the verification key ${key.nPublic}: update ProofLib.sol`);
  }
  return render(key);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await writeFile(BATCH_VERIFIER_PATH, await generateBatchVerifier());
  console.log(`wrote ${path.relative(REPO_ROOT, BATCH_VERIFIER_PATH)}`);
}
