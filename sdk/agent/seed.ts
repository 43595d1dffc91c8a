import { randomBytes } from "node:crypto";
import { concat, getBytes, keccak256, toUtf8Bytes, type BytesLike } from "ethers";
import { SNARK_SCALAR_FIELD } from "../crypto/field.js";
import { hash3 } from "../crypto/poseidon.js";
import type { NoteSecrets } from "../note/note.js";

/** Length of a wallet seed in bytes. */
export const SEED_LENGTH = 32;

/**
 * Domain tags of the two master keys: keccak256(tag ‖ seed) mod FIELD. Changing them changes every note a seed
 * has ever derived, so they are versioned and pinned by test vectors.
 */
export const MASTER_NULLIFIER_TAG = "x402-privacy-facilitator/master-nullifier/v1";
export const MASTER_SECRET_TAG = "x402-privacy-facilitator/master-secret/v1";

/** The two field elements every deposit note of a seed is derived from. As secret as the seed itself. */
export interface MasterKeys {
  masterNullifier: bigint;
  masterSecret: bigint;
}

/** A fresh random seed. Whoever holds it can rebuild and spend every note derived from it. */
export function generateSeed(): Uint8Array {
  return new Uint8Array(randomBytes(SEED_LENGTH));
}

/** The master keys of a 32-byte seed (bytes or 0x-hex): full 256-bit hashes reduced into the BN254 field. */
export function masterKeysOf(seed: BytesLike): MasterKeys {
  const bytes = getBytes(seed, "seed");
  if (bytes.length !== SEED_LENGTH) throw new RangeError(`seed must be ${SEED_LENGTH} bytes, got ${bytes.length}`);
  const derive = (tag: string) => BigInt(keccak256(concat([toUtf8Bytes(tag), bytes]))) % SNARK_SCALAR_FIELD;
  return { masterNullifier: derive(MASTER_NULLIFIER_TAG), masterSecret: derive(MASTER_SECRET_TAG) };
}

/**
 * Secrets of deposit `index` of a seed into the pool of `scope` (docs/design.md section 2):
 * nullifier = Poseidon(masterNullifier, scope, index), secret = Poseidon(masterSecret, scope, index).
 */
export function depositSecretsOf(keys: MasterKeys, scope: bigint, index: number): NoteSecrets {
  assertDepositIndex(index);
  const i = BigInt(index);
  return { nullifier: hash3(keys.masterNullifier, scope, i), secret: hash3(keys.masterSecret, scope, i) };
}

function assertDepositIndex(index: number): void {
  if (!Number.isSafeInteger(index) || index < 0) {
    throw new RangeError(`deposit index must be a non-negative integer, got ${index}`);
  }
}
