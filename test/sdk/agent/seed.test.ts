import { expect } from "chai";
import { solidityPackedKeccak256 } from "ethers";
import {
  depositSecretsOf,
  generateSeed,
  MASTER_NULLIFIER_TAG,
  MASTER_SECRET_TAG,
  masterKeysOf,
  SEED_LENGTH,
} from "../../../sdk/agent/index.js";
import { SNARK_SCALAR_FIELD } from "../../../sdk/index.js";

// Fixed vectors, computed once with this code and pinned: a change to the derivation would strand every note a
// seed has already deposited.
const SEED = "0x000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
// The scope of the first Hardhat deployment, as in the note scheme's vectors.
const SCOPE = 1159582289016094876243468043392739455423383311264603983498058730724162192691n;
const VECTORS = {
  masterNullifier: 18285675953238466015488035296815684595542595266458107126447028012459477239532n,
  masterSecret: 5842296710875340609069088278090148563083625535214459283740400399568039830811n,
  deposit0: {
    nullifier: 5485142951097590564887354613224927210154244594522482888077670896475320189820n,
    secret: 18060521754152033268951022929770433348421484234583143778531907073350524888667n,
  },
  deposit1: {
    nullifier: 13182953913412577756719552824870766834824055072801704844220881374637192873980n,
    secret: 9132004551821423243454419147400231852443076774336372914430111171645097185072n,
  },
};

describe("agent seed derivation", function () {
  it("derives the pinned master keys and deposit secrets", function () {
    const keys = masterKeysOf(SEED);
    expect(keys).to.deep.equal({ masterNullifier: VECTORS.masterNullifier, masterSecret: VECTORS.masterSecret });
    expect(depositSecretsOf(keys, SCOPE, 0)).to.deep.equal(VECTORS.deposit0);
    expect(depositSecretsOf(keys, SCOPE, 1)).to.deep.equal(VECTORS.deposit1);
  });

  it("derives each master key as keccak256(abi.encodePacked(tag, seed)) mod FIELD", function () {
    const expected = (tag: string) =>
      BigInt(solidityPackedKeccak256(["string", "bytes32"], [tag, SEED])) % SNARK_SCALAR_FIELD;
    expect(masterKeysOf(SEED)).to.deep.equal({
      masterNullifier: expected(MASTER_NULLIFIER_TAG),
      masterSecret: expected(MASTER_SECRET_TAG),
    });
  });

  it("accepts the seed as bytes or hex alike", function () {
    expect(masterKeysOf(Uint8Array.from({ length: SEED_LENGTH }, (_, i) => i))).to.deep.equal(masterKeysOf(SEED));
  });

  it("gives distinct secrets per index, per scope and per seed", function () {
    const keys = masterKeysOf(SEED);
    const secrets = [
      depositSecretsOf(keys, SCOPE, 0),
      depositSecretsOf(keys, SCOPE, 1),
      depositSecretsOf(keys, SCOPE + 1n, 0),
      depositSecretsOf(masterKeysOf(`0x${"ff".repeat(SEED_LENGTH)}`), SCOPE, 0),
    ];
    const values = secrets.flatMap(({ nullifier, secret }) => [nullifier, secret]);
    expect(new Set(values).size).to.equal(values.length);
  });

  it("generates fresh random seeds of 32 bytes", function () {
    const [first, second] = [generateSeed(), generateSeed()];
    expect(first).to.have.length(SEED_LENGTH);
    expect(first).to.not.deep.equal(second);
  });

  it("rejects a seed that is not 32 bytes and a negative or fractional index", function () {
    expect(() => masterKeysOf("0x0102")).to.throw(RangeError, "seed must be 32 bytes, got 2");
    expect(() => masterKeysOf(`${SEED}00`)).to.throw(RangeError, "seed must be 32 bytes, got 33");
    const keys = masterKeysOf(SEED);
    expect(() => depositSecretsOf(keys, SCOPE, -1)).to.throw(RangeError, "deposit index");
    expect(() => depositSecretsOf(keys, SCOPE, 1.5)).to.throw(RangeError, "deposit index");
  });
});
