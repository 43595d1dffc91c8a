import { expect } from "chai";
import { network } from "hardhat";
import { hexlify, randomBytes } from "ethers";
import { poseidon2Hash2 } from "../../sdk/crypto/poseidon2.js";
import { SNARK_SCALAR_FIELD as F } from "../../sdk/crypto/field.js";

const { ethers } = await network.create();

const random = () => BigInt(hexlify(randomBytes(32)));

describe("generated Poseidon2T3 library (contracts/lib/poseidon)", function () {
  async function harness() {
    const poseidonT3 = await ethers.deployContract("PoseidonT3");
    return ethers.deployContract("Poseidon2T3Harness", { libraries: { PoseidonT3: await poseidonT3.getAddress() } });
  }

  it("hashes as poseidon2Hash2 on field edges and random field elements", async function () {
    const h = await harness();
    const words = [0n, 1n, 2n, F - 2n, F - 1n, ...Array.from({ length: 40 }, () => random() % F)];
    for (let i = 0; i < words.length; i++) {
      for (const j of [i, (i * 7 + 3) % words.length]) {
        const [a, b] = [words[i]!, words[j]!];
        expect(await h.hash(a, b), `hash(${a}, ${b})`).to.equal(poseidon2Hash2(a, b));
      }
    }
  });

  it("reduces words above the field mod p first", async function () {
    const h = await harness();
    for (const [a, b] of [[F, 0n], [F + 1n, F - 1n], [2n ** 256n - 1n, 2n ** 256n - 1n], [random(), random()]]) {
      expect(await h.hash(a!, b!), `hash(${a}, ${b})`).to.equal(poseidon2Hash2(a! % F, b! % F));
    }
  });

  // A budget for the generated code (9.9k at solc 0.8.28, runs 1e6, legacy pipeline), against PoseidonT3's 13.8k.
  it("costs under 10k gas a hash, less than PoseidonT3", async function () {
    const h = await harness();
    const [a, b] = [random() % F, random() % F];
    const [digest, gas] = await h.gasOfHash(a, b);
    const [digestT3, gasT3] = await h.gasOfPoseidonT3(a, b);
    expect(digest).to.equal(poseidon2Hash2(a, b));
    expect(digestT3).to.not.equal(digest);
    expect(gas, `Poseidon2T3 ${gas} gas, PoseidonT3 ${gasT3}`).to.be.below(10_000n);
    expect(gas).to.be.below(gasT3);
  });
});
