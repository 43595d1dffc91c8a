import { expect } from "chai";
import { readFile } from "node:fs/promises";
import { hexlify, toBeHex } from "ethers";
import hre, { network } from "hardhat";
import { WITHDRAW_ARTIFACTS } from "../../sdk/circuit/artifacts.js";
import { deployFacilitator } from "../../scripts/deploy/deploy-facilitator.js";
import { ConfigError } from "../../lib/env-config.js";
import { loadVerifyDeploymentConfig } from "../../scripts/verify-deployment/config.js";
import type { DeploymentCheck } from "../../scripts/verify-deployment/deployment-check.js";
import { verifyDeployment } from "../../scripts/verify-deployment/verify-deployment.js";

const connection = await network.create();
const { ethers, networkHelpers } = connection;

/** The facilitator as `npm run deploy` deploys it, with the postman, refunder and treasury each an account of its own. */
async function deployed() {
  const [deployer, postman, refunder, treasury, stranger] = await ethers.getSigners();
  const deployment = await deployFacilitator(connection, { postman: postman!.address, refunder: refunder!.address, accessFeeTreasury: treasury!.address });
  return { ...deployment, deployer: deployer!, stranger: stranger! };
}

const failing = (checks: DeploymentCheck[]) => checks.filter((check) => !check.ok);
const verify = (book: Awaited<ReturnType<typeof deployed>>["addressBook"]) => verifyDeployment({ provider: ethers.provider, book, artifacts: hre.artifacts });

describe("verify:deployment", function () {
  it("passes on a deployment the deploy code made, checking each contract, immutable, library, fee and role", async function () {
    const { addressBook } = await networkHelpers.loadFixture(deployed);
    const checks = await verify(addressBook);
    expect(failing(checks)).to.deep.equal([]);
    const names = checks.map((check) => check.check);
    for (const contract of ["Entrypoint", "PrivacyPool", "WithdrawalBatchVerifier", "PoseidonT2", "PoseidonT3", "PoseidonT4"]) {
      expect(names.some((name) => name.startsWith(`${contract} bytecode at`)), contract).to.equal(true);
    }
    for (const immutable of ["ENTRYPOINT", "WITHDRAWAL_BATCH_VERIFIER", "ASSET", "SCOPE"]) expect(names).to.include(`PrivacyPool.${immutable} (immutable)`);
    expect(checks.find((check) => check.check === "role REFUNDER_ROLE")).to.deep.include({ expected: addressBook.refunder, found: addressBook.refunder });
    expect(checks.find((check) => check.check === "access-fee treasury")).to.deep.include({ found: addressBook.accessFeeTreasury });
  });

  it("fails naming the role and the stranger after a role is granted to a stranger, and passes once it is revoked", async function () {
    const { addressBook, entrypoint, stranger } = await networkHelpers.loadFixture(deployed);
    const role = await entrypoint.POSTMAN_ROLE();
    await entrypoint.grantRole(role, stranger.address);
    const [mismatch, ...others] = failing(await verify(addressBook));
    expect(others).to.deep.equal([]);
    expect(mismatch).to.deep.include({ check: "role POSTMAN_ROLE", expected: addressBook.postman });
    expect(mismatch!.found).to.contain(`not named: ${stranger.address}`);

    await entrypoint.revokeRole(role, stranger.address);
    expect(failing(await verify(addressBook))).to.deep.equal([]);
  });

  it("takes ROLE_HOLDERS instead of the address book for the roles it names (a key added or rotated)", async function () {
    const { addressBook, entrypoint, stranger } = await networkHelpers.loadFixture(deployed);
    await entrypoint.grantRole(await entrypoint.REFUNDER_ROLE(), stranger.address);
    const config = loadVerifyDeploymentConfig({ ROLE_HOLDERS: `REFUNDER_ROLE=${addressBook.refunder},${stranger.address.toLowerCase()};NO_SUCH_ROLE=${stranger.address}` });
    expect(config.roleHolders).to.deep.equal({ REFUNDER_ROLE: [addressBook.refunder, stranger.address], NO_SUCH_ROLE: [stranger.address] });
    const [unknownRole, ...others] = failing(await verifyDeployment({ provider: ethers.provider, book: addressBook, artifacts: hre.artifacts, roleHolders: config.roleHolders }));
    expect(others).to.deep.equal([]);
    expect(unknownRole).to.deep.include({ check: "role NO_SUCH_ROLE", found: "the entrypoint defines no such role" });
    expect(() => loadVerifyDeploymentConfig({ ROLE_HOLDERS: "REFUNDER_ROLE=0x1234" })).to.throw(ConfigError, "ROLE_HOLDERS");
  });

  it("fails naming a role it cannot check against the address book, or one the book's holder lost", async function () {
    const { addressBook, entrypoint } = await networkHelpers.loadFixture(deployed);
    const { refunder, ...withoutRefunder } = addressBook;
    const [unknown, ...others] = failing(await verify(withoutRefunder));
    expect(others).to.deep.equal([]);
    expect(unknown).to.deep.include({ check: "role REFUNDER_ROLE", expected: "not in the address book (ROLE_HOLDERS names it)" });

    await entrypoint.revokeRole(await entrypoint.REFUNDER_ROLE(), refunder!);
    const [lost] = failing(await verify(addressBook));
    expect(lost).to.deep.include({ check: "role REFUNDER_ROLE", found: `nobody (missing: ${refunder})` });
  });

  it("fails naming the pool's bytecode against a pool whose inlined verifier holds another key", async function () {
    const { addressBook } = await networkHelpers.loadFixture(deployed);
    // One constant of the verification key, as the inlined verifier pushes it (PUSH32), changed by one bit.
    const vkey = JSON.parse(await readFile(WITHDRAW_ARTIFACTS.vkey, "utf8")) as { vk_delta_2: string[][] };
    const constant = toBeHex(BigInt(vkey.vk_delta_2[0]![1]!), 32).slice(2);
    const code = await ethers.provider.getCode(addressBook.privacyPool);
    const at = code.indexOf(`7f${constant}`);
    expect(at % 2 === 0 && at > 0, "the key's delta is in the pool's code").to.equal(true);
    const bytes = ethers.getBytes(code);
    bytes[(at - 2) / 2 + 32]! ^= 0x01;
    await networkHelpers.setCode(addressBook.privacyPool, hexlify(bytes));

    const [mismatch, ...others] = failing(await verify(addressBook));
    expect(others).to.deep.equal([]);
    expect(mismatch!.check).to.equal(`PrivacyPool bytecode at ${addressBook.privacyPool}`);
    expect(mismatch!.found).to.match(/differs from byte \d+/);
  });
});
