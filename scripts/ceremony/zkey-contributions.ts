import { createHash } from "node:crypto";
import * as snarkjs from "snarkjs";
import { readSections } from "./binfile.js";

/** One phase-2 contribution as the zkey carries it. */
export interface ZkeyContribution {
  name: string;
  /** snarkjs' contribution hash (BLAKE2b-512, hex): what `zkey contribute` and `zkey verify` print for it. */
  hash: string;
  /** Set for a beacon: the beacon's value (hex) and its 2^iterationsExp iterations. */
  beacon?: { value: string; iterationsExp: number };
}

/** The zkey's MPC section (zkey_utils' writeMPCParams). */
const MPC_SECTION = 10;
const CONTRIBUTION_TYPE = 0;
const BEACON_TYPE = 1;
/** Parameter tags of a contribution (zkey_utils' writeContribution). */
const NAME_PARAM = 1;
const ITERATIONS_PARAM = 2;
const BEACON_PARAM = 3;

const G1_BYTES = 64;
const G2_BYTES = 128;
const TRANSCRIPT_BYTES = 64;

/**
 * The contributions recorded in a Groth16 zkey, in order, with the hash snarkjs gives each: BLAKE2b-512 of the
 * contribution's public key (deltaAfter, g1_s, g1_sx as uncompressed G1, g2_spx as uncompressed G2, then its
 * transcript), zkey_utils' hashPubKey. Only reads the file; `snarkjs zkey verify` is what checks the chain.
 */
export async function readZkeyContributions(file: string): Promise<ZkeyContribution[]> {
  const mpc = await (await readSections(file, "zkey")).read(MPC_SECTION);
  const curve = await snarkjs.curves.getCurveFromName("bn128");
  const uncompressed = (codec: snarkjs.CurveGroup, lem: Uint8Array) => {
    const out = new Uint8Array(lem.length);
    codec.toRprUncompressed(out, 0, codec.fromRprLEM(lem, 0));
    return out;
  };

  let at = 64; // the circuit hash
  const take = (length: number) => {
    if (at + length > mpc.length) throw new Error(`${file}: the contributions section is truncated`);
    const bytes = mpc.subarray(at, at + length);
    at += length;
    return bytes;
  };
  const u32 = () => take(4).readUInt32LE(0);

  const contributions: ZkeyContribution[] = [];
  for (let count = u32(), i = 0; i < count; i++) {
    const hasher = createHash("blake2b512");
    for (const codec of [curve.G1, curve.G1, curve.G1]) hasher.update(uncompressed(codec, take(G1_BYTES)));
    hasher.update(uncompressed(curve.G2, take(G2_BYTES)));
    hasher.update(take(TRANSCRIPT_BYTES));
    const type = u32();
    const params = take(u32());
    let name = "";
    let iterationsExp: number | undefined;
    let value: string | undefined;
    for (let p = 0; p < params.length; ) {
      const tag = params[p++];
      if (tag === ITERATIONS_PARAM) {
        iterationsExp = params[p++];
      } else if (tag === NAME_PARAM || tag === BEACON_PARAM) {
        const length = params[p++] ?? 0;
        const bytes = params.subarray(p, p + length);
        p += length;
        if (tag === NAME_PARAM) name = new TextDecoder().decode(bytes);
        else value = Buffer.from(bytes).toString("hex");
      } else {
        throw new Error(`${file}: contribution ${i + 1} has an unknown parameter ${tag}`);
      }
    }
    if (type !== CONTRIBUTION_TYPE && type !== BEACON_TYPE) throw new Error(`${file}: contribution ${i + 1} has an unknown type ${type}`);
    const beacon = type === BEACON_TYPE && value !== undefined && iterationsExp !== undefined ? { value, iterationsExp } : undefined;
    if (type === BEACON_TYPE && beacon === undefined) throw new Error(`${file}: beacon ${i + 1} lacks its value or iterations`);
    contributions.push({ name, hash: hasher.digest("hex"), ...(beacon !== undefined && { beacon }) });
  }
  return contributions;
}
