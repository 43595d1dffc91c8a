import { expect } from "chai";
import { network } from "hardhat";
import { hexlify, randomBytes } from "ethers";
import { hash2, hash3 } from "../../sdk/index.js";

const { ethers } = await network.create();

const F = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;
const random = () => BigInt(hexlify(randomBytes(32)));

describe("generated Poseidon libraries (contracts/lib/poseidon)", function () {
  // Edges of the field, words above it (reduced mod F, as poseidon-solidity does) and random words.
  const words = [0n, 1n, F - 1n, F, F + 1n, 2n ** 256n - 1n, ...Array.from({ length: 40 }, random)];

  it("PoseidonT3 hashes two words as the circuit's Poseidon(2)", async function () {
    const t3 = await ethers.deployContract("PoseidonT3");
    for (let i = 0; i < words.length; i++) {
      const [a, b] = [words[i]!, words[(i * 7 + 3) % words.length]!];
      expect(await t3.hash(a, b), `hash(${a}, ${b})`).to.equal(hash2(a % F, b % F));
    }
  });

  it("PoseidonT4 hashes three words as the circuit's Poseidon(3)", async function () {
    const t4 = await ethers.deployContract("PoseidonT4");
    for (let i = 0; i < words.length; i++) {
      const [a, b, c] = [words[i]!, words[(i * 5 + 1) % words.length]!, words[(i * 11 + 2) % words.length]!];
      expect(await t4.hash(a, b, c), `hash(${a}, ${b}, ${c})`).to.equal(hash3(a % F, b % F, c % F));
    }
  });
});
