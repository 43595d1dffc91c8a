import { expect } from "chai";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { hexlify, randomBytes } from "ethers";
import { WitnessCalculatorBuilder, type WitnessCalculator } from "circom_runtime";
import * as snarkjs from "snarkjs";
import { compileCircom } from "../../scripts/circuits/compile.js";
import { CIRCUIT_CONFIG } from "../../sdk/circuit/config.js";
import { SNARK_SCALAR_FIELD as P } from "../../sdk/crypto/field.js";
import { poseidon2Hash2 } from "../../sdk/crypto/poseidon2.js";

const randomField = () => BigInt(hexlify(randomBytes(32))) % P;

// circuits/poseidon2.circom compiled alone, as the withdrawal circuit is (same optimization level), under a main
// component of its own.
describe("Poseidon2Hash2 circuit (circuits/poseidon2.circom)", function () {
  let buildDir: string;
  let r1cs: string;
  let calculator: WitnessCalculator;

  before(async function () {
    buildDir = await mkdtemp(path.join(os.tmpdir(), "poseidon2-circuit-"));
    const main = path.join(buildDir, "poseidon2_hash2.circom");
    await writeFile(main, 'pragma circom 2.1.9;\ninclude "circuits/poseidon2.circom";\ncomponent main = Poseidon2Hash2();\n');
    const compiled = await compileCircom(main, buildDir, CIRCUIT_CONFIG.optimization);
    r1cs = compiled.r1cs;
    calculator = await WitnessCalculatorBuilder(await readFile(compiled.wasm));
  });

  after(async function () {
    await rm(buildDir, { recursive: true, force: true });
  });

  it("outputs poseidon2Hash2 of its inputs", async function () {
    const pairs = [[0n, 0n], [1n, 2n], [P - 1n, P - 1n], [0n, P - 1n], [randomField(), randomField()], [randomField(), randomField()]];
    for (const [left, right] of pairs) {
      // Signal 0 is the constant 1, signal 1 the main component's output.
      const witness = await calculator.calculateWitness({ in: [left, right] }, true);
      expect(witness[1], `Poseidon2Hash2(${left}, ${right})`).to.equal(poseidon2Hash2(left!, right!));
    }
  });

  it("has 240 constraints: three an S-box, none for the linear layers", async function () {
    const info = await snarkjs.r1cs.info(r1cs);
    expect(info.nConstraints).to.equal(80 * 3);
    expect([info.nOutputs, info.nPrvInputs, info.nPubInputs]).to.deep.equal([1, 2, 0]);
  });
});
