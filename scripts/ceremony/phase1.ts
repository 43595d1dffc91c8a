import { createHash, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import * as snarkjs from "snarkjs";
import { progressLogger } from "../circuits/progress.js";
import { readSections } from "./binfile.js";

/**
 * Prepared phase-1 files of the Hermez (Polygon zkEVM) ceremony, "54 contributions and a beacon", by power, with
 * the BLAKE2b-512 hashes that snarkjs' README publishes for them (node_modules/snarkjs/README.md, "Prepared (phase2)
 * Ptau files for bn128"). Files from https://storage.googleapis.com/zkevm/ptau/<file>.
 *
 * The Perpetual Powers of Tau (PSE) prepared files, ppot_0080_<power>.ptau, are not here: PSE publishes the files
 * but no hash of them. Add one only with a hash its publisher states.
 */
export const KNOWN_PHASE1: Readonly<Record<number, { file: string; blake2b: string }>> = {
  8: { file: "powersOfTau28_hez_final_08.ptau", blake2b: "d6a8fb3a04feb600096c3b791f936a578c4e664d262e4aa24beed1b7a9a96aa5eb72864d628db247e9293384b74b36ffb52ca8d148d6e1b8b51e279fdf57b583" },
  9: { file: "powersOfTau28_hez_final_09.ptau", blake2b: "94f108a80e81b5d932d8e8c9e8fd7f46cf32457e31462deeeef37af1b71c2c1b3c71fb0d9b59c654ec266b042735f50311f9fd1d4cadce47ab234ad163157cb5" },
  10: { file: "powersOfTau28_hez_final_10.ptau", blake2b: "6cfeb8cda92453099d20120bdd0e8a5c4e7706c2da9a8f09ccc157ed2464d921fd0437fb70db42104769efd7d6f3c1f964bcf448c455eab6f6c7d863e88a5849" },
  11: { file: "powersOfTau28_hez_final_11.ptau", blake2b: "47c282116b892e5ac92ca238578006e31a47e7c7e70f0baa8b687f0a5203e28ea07bbbec765a98dcd654bad618475d4661bfaec3bd9ad2ed12e7abc251d94d33" },
  12: { file: "powersOfTau28_hez_final_12.ptau", blake2b: "ded2694169b7b08e898f736d5de95af87c3f1a64594013351b1a796dbee393bd825f88f9468c84505ddd11eb0b1465ac9b43b9064aa8ec97f2b73e04758b8a4a" },
  13: { file: "powersOfTau28_hez_final_13.ptau", blake2b: "58efc8bf2834d04768a3d7ffcd8e1e23d461561729beaac4e3e7a47829a1c9066d5320241e124a1a8e8aa6c75be0ba66f65bc8239a0542ed38e11276f6fdb4d9" },
  14: { file: "powersOfTau28_hez_final_14.ptau", blake2b: "eeefbcf7c3803b523c94112023c7ff89558f9b8e0cf5d6cdcba3ade60f168af4a181c9c21774b94fbae6c90411995f7d854d02ebd93fb66043dbb06f17a831c1" },
  15: { file: "powersOfTau28_hez_final_15.ptau", blake2b: "982372c867d229c236091f767e703253249a9b432c1710b4f326306bfa2428a17b06240359606cfe4d580b10a5a1f63fbed499527069c18ae17060472969ae6e" },
  16: { file: "powersOfTau28_hez_final_16.ptau", blake2b: "6a6277a2f74e1073601b4f9fed6e1e55226917efb0f0db8a07d98ab01df1ccf43eb0e8c3159432acd4960e2f29fe84a4198501fa54c8dad9e43297453efec125" },
  17: { file: "powersOfTau28_hez_final_17.ptau", blake2b: "6247a3433948b35fbfae414fa5a9355bfb45f56efa7ab4929e669264a0258976741dfbe3288bfb49828e5df02c2e633df38d2245e30162ae7e3bcca5b8b49345" },
  18: { file: "powersOfTau28_hez_final_18.ptau", blake2b: "7e6a9c2e5f05179ddfc923f38f917c9e6831d16922a902b0b4758b8e79c2ab8a81bb5f29952e16ee6c5067ed044d7857b5de120a90704c1d3b637fd94b95b13e" },
  19: { file: "powersOfTau28_hez_final_19.ptau", blake2b: "bca9d8b04242f175189872c42ceaa21e2951e0f0f272a0cc54fc37193ff6648600eaf1c555c70cdedfaf9fb74927de7aa1d33dc1e2a7f1a50619484989da0887" },
  20: { file: "powersOfTau28_hez_final_20.ptau", blake2b: "89a66eb5590a1c94e3f1ee0e72acf49b1669e050bb5f93c73b066b564dca4e0c7556a52b323178269d64af325d8fdddb33da3a27c34409b821de82aa2bf1a27b" },
  21: { file: "powersOfTau28_hez_final_21.ptau", blake2b: "9aef0573cef4ded9c4a75f148709056bf989f80dad96876aadeb6f1c6d062391f07a394a9e756d16f7eb233198d5b69407cca44594c763ab4a5b67ae73254678" },
  22: { file: "powersOfTau28_hez_final_22.ptau", blake2b: "0d64f63dba1a6f11139df765cb690da69d9b2f469a1ddd0de5e4aa628abb28f787f04c6a5fb84a235ec5ea7f41d0548746653ecab0559add658a83502d1cb21b" },
  23: { file: "powersOfTau28_hez_final_23.ptau", blake2b: "3063a0bd81d68711197c8820a92466d51aeac93e915f5136d74f63c394ee6d88c5e8016231ea6580bec02e25d491f319d92e77f5c7f46a9caa8f3b53c0ea544f" },
  24: { file: "powersOfTau28_hez_final_24.ptau", blake2b: "fa404d140d5819d39984833ca5ec3632cd4995f81e82db402371a4de7c2eae8687c62bc632a95b0c6aadba3fb02680a94e09174b7233ccd26d78baca2647c733" },
  25: { file: "powersOfTau28_hez_final_25.ptau", blake2b: "0377d860cdb09a8a31ea1b0b8c04335614c8206357181573bf294c25d5ca7dff72387224fbd868897e6769f7805b3dab02854aec6d69d7492883b5e4e5f35eeb" },
  26: { file: "powersOfTau28_hez_final_26.ptau", blake2b: "418dee4a74b9592198bd8fd02ad1aea76f9cf3085f206dfd7d594c9e264ae919611b1459a1cc920c2f143417744ba9edd7b8d51e44be9452344a225ff7eead19" },
  27: { file: "powersOfTau28_hez_final_27.ptau", blake2b: "10ffd99837c512ef99752436a54b9810d1ac8878d368fb4b806267bdd664b4abf276c9cd3c4b9039a1fa4315a0c326c0e8e9e8fe0eb588ffd4f9021bf7eae1a1" },
  28: { file: "powersOfTau28_hez_final.ptau", blake2b: "55c77ce8562366c91e7cda394cf7b7c15a06c12d8c905e8b36ba9cf5e13eb37d1a429c589e8eaba4c591bc4b88a0e2828745a53e170eac300236f5c1a326f41a" },
};

/** The phase-1 file a ceremony starts from, as its transcript and the manifest record it. */
export interface Phase1Record {
  /** The file's name; verify and finish are told its path again. */
  file: string;
  power: number;
  blake2b: string;
  sha256: string;
  source: string;
  /** True unless the file is a public ceremony's, checked against its published hash. */
  development: boolean;
}

/** The hashes of a file, read once: BLAKE2b-512 (what public ceremonies publish) and SHA-256. */
export async function fileHashes(file: string): Promise<{ blake2b: string; sha256: string }> {
  const blake2b = createHash("blake2b512");
  const sha256 = createHash("sha256");
  for await (const chunk of createReadStream(file)) {
    blake2b.update(chunk as Buffer);
    sha256.update(chunk as Buffer);
  }
  return { blake2b: blake2b.digest("hex"), sha256: sha256.digest("hex") };
}

/** The power of a ptau file (its header, section 1: n8, q, power, ceremonyPower) and whether it is prepared. */
export async function ptauHeader(file: string): Promise<{ power: number; prepared: boolean }> {
  const sections = await readSections(file, "ptau");
  const header = await sections.read(1);
  const n8 = header.readUInt32LE(0);
  // Section 12 holds the Lagrange-basis points `powersoftau prepare phase2` adds; newZKey needs them.
  return { power: header.readUInt32LE(4 + n8), prepared: sections.has(12) };
}

const DEVELOPMENT_HINT = "To rehearse with it, pass --development: its keys are development keys, refused on production chains whoever contributes.";

/**
 * Checks the phase-1 file a ceremony starts from. A public one must be the file KNOWN_PHASE1 lists for its power,
 * byte for byte (its BLAKE2b-512); anything else is refused unless `development` is set, and is then recorded as a
 * development file: whoever made it may know its toxic waste and forge proofs.
 */
export async function checkPhase1(file: string, development: boolean): Promise<Phase1Record> {
  const { power, prepared } = await ptauHeader(file);
  if (!prepared) throw new Error(`${file} is not prepared for phase 2 (snarkjs powersoftau prepare phase2)`);
  const hashes = await fileHashes(file);
  const known = KNOWN_PHASE1[power];
  if (known !== undefined && known.blake2b === hashes.blake2b) {
    return { file: path.basename(file), power, ...hashes, source: `Hermez ${known.file} (54 contributions and a beacon), published BLAKE2b-512 checked`, development: false };
  }
  if (!development) {
    throw new Error(
      known === undefined
        ? `${file}: no public phase-1 file of power ${power} is known (scripts/ceremony/phase1.ts); refusing it. ${DEVELOPMENT_HINT}`
        : `${file}: its BLAKE2b-512 ${hashes.blake2b} is not the published hash of ${known.file} (${known.blake2b}); refusing it. ${DEVELOPMENT_HINT}`,
    );
  }
  return { file: path.basename(file), power, ...hashes, source: `development phase 1 ${path.basename(file)}, not a public ceremony's file`, development: true };
}

/**
 * A development phase-1 file of `power` at `out`: a new accumulator, one random contribution made here, prepared
 * for phase 2. Its toxic waste existed on this machine, so keys made from it are development keys. Preparing takes
 * most of the time (docs/trusted-setup.md, "How long each step takes").
 */
export async function createDevelopmentPhase1(power: number, out: string, say: (line: string) => void): Promise<void> {
  const dir = path.dirname(out);
  await mkdir(dir, { recursive: true });
  const initial = path.join(dir, `${path.basename(out, ".ptau")}_0000.ptau`);
  const contributed = path.join(dir, `${path.basename(out, ".ptau")}_0001.ptau`);
  const logger = progressLogger(say);
  try {
    say(`phase 1 (development): new accumulator, power ${power}`);
    await snarkjs.powersOfTau.newAccumulator(await snarkjs.curves.getCurveFromName("bn128"), power, initial, logger);
    say("phase 1 (development): one contribution");
    await snarkjs.powersOfTau.contribute(initial, contributed, "development phase-1 contribution", randomBytes(64).toString("hex"), logger);
    say("phase 1 (development): prepare phase 2 (the long step)");
    await snarkjs.powersOfTau.preparePhase2(contributed, out, logger);
  } finally {
    await rm(initial, { force: true });
    await rm(contributed, { force: true });
  }
}
