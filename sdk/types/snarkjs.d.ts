// The parts of snarkjs' API this project uses (snarkjs ships no type declarations).
declare module "snarkjs" {
  /** The SDK's own types (its package's declarations must not need these). */
  export type Groth16Proof = import("../circuit/prover.js").Groth16Proof;
  export type VerificationKey = import("../circuit/prover.js").VerificationKey;
  export type PublicSignals = string[];
  export type CircuitSignals = Record<string, string | string[] | bigint | bigint[]>;
  export type ZKArtifact = string | Uint8Array;
  export interface Logger {
    debug(msg: string): void;
    info(msg: string): void;
    warn(msg: string): void;
    error(msg: string): void;
  }

  export const groth16: {
    fullProve(
      input: CircuitSignals,
      wasm: ZKArtifact,
      zkey: ZKArtifact,
      logger?: Logger,
    ): Promise<{ proof: Groth16Proof; publicSignals: PublicSignals }>;
    prove(zkey: ZKArtifact, witness: ZKArtifact, logger?: Logger): Promise<{ proof: Groth16Proof; publicSignals: PublicSignals }>;
    verify(vkey: VerificationKey, publicSignals: PublicSignals, proof: Groth16Proof, logger?: Logger): Promise<boolean>;
  };
  export const wtns: {
    calculate(input: CircuitSignals, wasm: ZKArtifact, output: ZKArtifact | { type: "mem"; data?: Uint8Array }): Promise<void>;
  };
  export const powersOfTau: {
    newAccumulator(curve: unknown, power: number, fileName: string, logger?: Logger): Promise<unknown>;
    contribute(oldPtau: string, newPtau: string, name: string, entropy: string, logger?: Logger): Promise<unknown>;
    preparePhase2(oldPtau: string, newPtau: string, logger?: Logger): Promise<unknown>;
  };
  export const zKey: {
    newZKey(r1cs: string, ptau: string, zkey: string, logger?: Logger): Promise<unknown>;
    /** Resolves with the contribution hash (BLAKE2b-512). */
    contribute(oldZkey: string, newZkey: string, name: string, entropy: string, logger?: Logger): Promise<Uint8Array>;
    /** Resolves with the contribution hash, or false (after logging why) for an invalid beacon or iteration count. */
    beacon(oldZkey: string, newZkey: string, name: string, beaconHash: string, numIterationsExp: number, logger?: Logger): Promise<Uint8Array | false>;
    exportVerificationKey(zkey: ZKArtifact, logger?: Logger): Promise<VerificationKey>;
    exportSolidityVerifier(zkey: ZKArtifact, templates: Record<string, string>, logger?: Logger): Promise<string>;
    verifyFromR1cs(r1cs: string, ptau: string, zkey: string, logger?: Logger): Promise<boolean>;
  };
  export const r1cs: {
    info(r1cs: string, logger?: Logger): Promise<{ nConstraints: number; nVars: number; nPubInputs: number; nOutputs: number; nPrvInputs: number }>;
  };
  /** An ffjavascript group, as far as this project reads points with it (Montgomery form, little-endian). */
  export interface CurveGroup {
    F: { n8: number };
    fromRprLEM(buffer: Uint8Array, offset: number): unknown;
    toRprUncompressed(buffer: Uint8Array, offset: number, point: unknown): void;
    toAffine(point: unknown): unknown;
    /** [x, y, z] of bigints (G2: pairs), as verification keys write them. */
    toObject(point: unknown): unknown;
  }
  export interface Curve {
    G1: CurveGroup;
    G2: CurveGroup;
  }
  export const curves: { getCurveFromName(name: string): Promise<Curve> };
}
