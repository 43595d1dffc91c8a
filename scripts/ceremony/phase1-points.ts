import { isDeepStrictEqual } from "node:util";
import * as snarkjs from "snarkjs";
import { readSections } from "./binfile.js";

/**
 * What a phase 1 leaves in every key made from it: alpha in G1 and beta in G2, as the verification key names them
 * (snarkjs' affine decimal strings, `vk_alpha_1` and `vk_beta_2`). Phase 2 never changes them, so they name the
 * phase-1 file a key came from whatever its transcript or manifest claim.
 */
export interface Phase1Points {
  alpha1: string[];
  beta2: string[][];
}

/** The key's phase-1 points, from its verification key. */
export function keyPhase1Points(vkey: { vk_alpha_1: unknown; vk_beta_2: unknown }): Phase1Points {
  return { alpha1: vkey.vk_alpha_1 as string[], beta2: vkey.vk_beta_2 as string[][] };
}

/** Whether two phase 1s are the same one. */
export function samePhase1Points(a: Phase1Points, b: Phase1Points): boolean {
  return isDeepStrictEqual(a, b);
}

const decimal = (value: unknown): unknown => (Array.isArray(value) ? value.map(decimal) : (value as bigint).toString());

/**
 * The phase-1 points a ptau file gives a key: the first point of its alphaTauG1 section (4), alpha times the
 * generator, and its betaG2 section (6), in the form a verification key names them.
 */
export async function ptauPhase1Points(file: string): Promise<Phase1Points> {
  const sections = await readSections(file, "ptau");
  const curve = await snarkjs.curves.getCurveFromName("bn128");
  const alpha = (await sections.read(4)).subarray(0, curve.G1.F.n8 * 2);
  const beta = await sections.read(6);
  return {
    alpha1: decimal(curve.G1.toObject(curve.G1.toAffine(curve.G1.fromRprLEM(alpha, 0)))) as string[],
    beta2: decimal(curve.G2.toObject(curve.G2.toAffine(curve.G2.fromRprLEM(beta, 0)))) as string[][],
  };
}
