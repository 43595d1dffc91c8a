import { expect } from "chai";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { hexlify, toBeHex } from "ethers";
import hre, { network } from "hardhat";
import { WITHDRAW_ARTIFACTS } from "../../sdk/circuit/artifacts.js";
import { deployFacilitator } from "../../scripts/deploy/deploy-facilitator.js";
import { ConfigError } from "../../lib/env-config.js";
import { loadVerifyDeploymentConfig } from "../../scripts/verify-deployment/config.js";
import type { DeploymentCheck } from "../../scripts/verify-deployment/deployment-check.js";
import { ChainHistoryError, creationBlock } from "../../scripts/verify-deployment/role-history.js";
import { verifyDeployment } from "../../scripts/verify-deployment/verify-deployment.js";

const connection = await network.create();
const { ethers, networkHelpers } = connection;

/** The facilitator as `npm run deploy` deploys it, with the postman and treasury each an account of its own. */
async function deployed() {
  const [deployer, postman, treasury, stranger] = await ethers.getSigners();
  const deployment = await deployFacilitator(connection, { postman: postman!.address, accessFeeTreasury: treasury!.address });
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
    for (const contract of ["Entrypoint", "PrivacyPool", "WithdrawalBatchVerifier", "TabPayer", "PoseidonT2", "PoseidonT3", "PoseidonT4"]) {
      expect(names.some((name) => name.startsWith(`${contract} bytecode at`)), contract).to.equal(true);
    }
    for (const immutable of ["ENTRYPOINT", "WITHDRAWAL_BATCH_VERIFIER", "ASSET", "SCOPE"]) expect(names).to.include(`PrivacyPool.${immutable} (immutable)`);
    expect(names).to.include("Entrypoint.TAB_PAYER_IMPLEMENTATION (immutable)").and.to.include("TabPayer.ENTRYPOINT (immutable)");
    // No role beyond the admin's and the postman's: none moves or returns an agent's money.
    expect(names.filter((name) => /^role [A-Z_]+$/.test(name))).to.have.members(["role DEFAULT_ADMIN_ROLE", "role POSTMAN_ROLE"]);
    expect(checks.find((check) => check.check === "access-fee treasury")).to.deep.include({ found: addressBook.accessFeeTreasury });
    expect(checks.find((check) => check.check.startsWith("USDC's DOMAIN_SEPARATOR"))).to.deep.include({ ok: true });
  });

  it("fails naming the role and the stranger after a role is granted to a stranger, and still names it in the history once revoked", async function () {
    const { addressBook, entrypoint, stranger } = await networkHelpers.loadFixture(deployed);
    const role = await entrypoint.POSTMAN_ROLE();
    await entrypoint.grantRole(role, stranger.address);
    const [mismatch, ...others] = failing(await verify(addressBook));
    expect(others).to.deep.equal([]);
    expect(mismatch).to.deep.include({ check: "role POSTMAN_ROLE", expected: addressBook.postman });
    expect(mismatch!.found).to.contain(`not named: ${stranger.address}`);

    await entrypoint.revokeRole(role, stranger.address);
    const [history, ...rest] = failing(await verify(addressBook));
    expect(rest).to.deep.equal([]);
    expect(history!.check).to.match(/^role POSTMAN_ROLE history since block \d+ \(creation\)$/);
    expect(history!.found).to.match(new RegExp(`held and given up by ${stranger.address} \\(granted by ${addressBook.deployer} at block \\d+, revoked by ${addressBook.deployer} at block \\d+\\): no recorded action`));
  });

  it("reports a stranger who held POSTMAN_ROLE, published a root and renounced, unless PAST_ROLE_HOLDERS names it (finding 3)", async function () {
    const { addressBook, entrypoint, stranger } = await networkHelpers.loadFixture(deployed);
    const role = await entrypoint.POSTMAN_ROLE();
    await entrypoint.grantRole(role, stranger.address);
    await entrypoint.connect(stranger).updateRoot(123456789n, 4, "ipfs://stranger");
    await entrypoint.connect(stranger).renounceRole(role, stranger.address);
    expect(await entrypoint.latestRoot()).to.equal(123456789n);

    const [history, ...others] = failing(await verify(addressBook));
    expect(others).to.deep.equal([]);
    expect(history!.check).to.match(/^role POSTMAN_ROLE history/);
    expect(history!.found).to.match(new RegExp(`${stranger.address} \\(granted by ${addressBook.deployer} at block \\d+, renounced at block \\d+\\): published ASP root 123456789 \\(block \\d+\\); renounced POSTMAN_ROLE`));

    const config = loadVerifyDeploymentConfig({ PAST_ROLE_HOLDERS: `POSTMAN_ROLE=${stranger.address}` });
    const known = await verifyDeployment({ provider: ethers.provider, book: addressBook, artifacts: hre.artifacts, pastRoleHolders: config.pastRoleHolders });
    expect(failing(known)).to.deep.equal([]);
  });

  it("finds an admin granted before the address book's start block, reading the roles from the entrypoint's creation (finding 2)", async function () {
    const { addressBook, entrypoint, stranger: hidden } = await networkHelpers.loadFixture(deployed);
    const admin = await entrypoint.DEFAULT_ADMIN_ROLE();
    await entrypoint.grantRole(admin, hidden.address);
    // Every expected grant emitted again after the hidden one, and a book that starts after it.
    const startBlock = (await ethers.provider.getBlockNumber()) + 1;
    const expected = [[admin, addressBook.deployer], [await entrypoint.POSTMAN_ROLE(), addressBook.postman]] as const;
    for (const [role, holder] of expected) {
      await entrypoint.connect(hidden).revokeRole(role, holder);
      await entrypoint.connect(hidden).grantRole(role, holder);
    }
    const book = { ...addressBook, startBlock };

    const [mismatch, ...others] = failing(await verify(book));
    expect(others).to.deep.equal([]);
    expect(mismatch).to.deep.include({ check: "role DEFAULT_ADMIN_ROLE", expected: addressBook.deployer });
    expect(mismatch!.found).to.contain(`not named: ${hidden.address} (granted by ${addressBook.deployer} at block`).and.to.contain(`revoked DEFAULT_ADMIN_ROLE from ${addressBook.deployer}`);
  });

  it("finds the entrypoint's creation block on the chain, and names a chain where it has no code", async function () {
    const { addressBook, stranger } = await networkHelpers.loadFixture(deployed);
    const latest = await ethers.provider.getBlockNumber();
    const created = await creationBlock(ethers.provider, addressBook.entrypoint, latest);
    expect(await ethers.provider.getCode(addressBook.entrypoint, created)).to.not.equal("0x");
    expect(await ethers.provider.getCode(addressBook.entrypoint, created - 1)).to.equal("0x");
    await assert.rejects(creationBlock(ethers.provider, stranger.address, latest), (error: unknown) => error instanceof ChainHistoryError && /has no code at block/.test(error.message));
  });

  it("takes ROLE_HOLDERS instead of the address book for the roles it names (a key added or rotated)", async function () {
    const { addressBook, entrypoint, stranger } = await networkHelpers.loadFixture(deployed);
    await entrypoint.grantRole(await entrypoint.POSTMAN_ROLE(), stranger.address);
    const config = loadVerifyDeploymentConfig({ ROLE_HOLDERS: `POSTMAN_ROLE=${addressBook.postman},${stranger.address.toLowerCase()};NO_SUCH_ROLE=${stranger.address}` });
    expect(config.roleHolders).to.deep.equal({ POSTMAN_ROLE: [addressBook.postman, stranger.address], NO_SUCH_ROLE: [stranger.address] });
    const [unknownRole, ...others] = failing(await verifyDeployment({ provider: ethers.provider, book: addressBook, artifacts: hre.artifacts, roleHolders: config.roleHolders }));
    expect(others).to.deep.equal([]);
    expect(unknownRole).to.deep.include({ check: "role NO_SUCH_ROLE", found: "the entrypoint defines no such role" });
    expect(() => loadVerifyDeploymentConfig({ ROLE_HOLDERS: "POSTMAN_ROLE=0x1234" })).to.throw(ConfigError, "ROLE_HOLDERS");
  });

  it("fails naming a role the book's holder lost", async function () {
    const { addressBook, entrypoint } = await networkHelpers.loadFixture(deployed);
    await entrypoint.revokeRole(await entrypoint.POSTMAN_ROLE(), addressBook.postman);
    const [lost, ...others] = failing(await verify(addressBook));
    expect(others).to.deep.equal([]);
    expect(lost).to.deep.include({ check: "role POSTMAN_ROLE", found: `nobody (missing: ${addressBook.postman})` });
  });

  /** The pool's code with one constant of its inlined key (vk_delta_2, pushed with PUSH32) changed by one bit. */
  async function poolWithAnotherKey(pool: string): Promise<Uint8Array> {
    const vkey = JSON.parse(await readFile(WITHDRAW_ARTIFACTS.vkey, "utf8")) as { vk_delta_2: string[][] };
    const constant = toBeHex(BigInt(vkey.vk_delta_2[0]![1]!), 32).slice(2);
    const code = await ethers.provider.getCode(pool);
    const at = code.indexOf(`7f${constant}`);
    expect(at % 2 === 0 && at > 0, "the key's delta is in the pool's code").to.equal(true);
    const bytes = ethers.getBytes(code);
    bytes[(at - 2) / 2 + 32]! ^= 0x01;
    return bytes;
  }

  it("fails naming the pool's bytecode and its key against a pool whose inlined verifier holds another key", async function () {
    const { addressBook } = await networkHelpers.loadFixture(deployed);
    await networkHelpers.setCode(addressBook.privacyPool, hexlify(await poolWithAnotherKey(addressBook.privacyPool)));

    const failed = failing(await verify(addressBook));
    expect(failed.map((check) => check.check)).to.deep.equal([`PrivacyPool holds this checkout's proving key`, `PrivacyPool bytecode at ${addressBook.privacyPool}`]);
    expect(failed[0]!.found).to.match(/^25 of 26: it was built with another proving key than this checkout's/);
    expect(failed[1]!.found).to.match(/differs from byte \d+/);
  });

  it("names the key and still checks every immutable, link and library of a pool whose code differs in length (finding 8)", async function () {
    const { addressBook } = await networkHelpers.loadFixture(deployed);
    const clean = await verify(addressBook);
    // Another key, and code of another length (as another compiler or key would give), its jumps intact.
    const bytes = await poolWithAnotherKey(addressBook.privacyPool);
    await networkHelpers.setCode(addressBook.privacyPool, hexlify(ethers.concat([bytes, "0x00"])));

    const checks = await verify(addressBook);
    expect(checks).to.have.length(clean.length);
    const failed = failing(checks);
    expect(failed.map((check) => check.check)).to.deep.equal([`PrivacyPool holds this checkout's proving key`, `PrivacyPool bytecode at ${addressBook.privacyPool}`]);
    expect(failed[0]!.expected).to.contain("sdk/artifacts/withdraw.vkey.json");
    expect(failed[1]!.found).to.match(/^\d+ bytes, compiled \d+$/);
    const names = checks.map((check) => check.check);
    for (const immutable of ["ENTRYPOINT", "WITHDRAWAL_BATCH_VERIFIER", "ASSET", "SCOPE"]) expect(names).to.include(`PrivacyPool.${immutable} (immutable, from its getter)`);
    for (const library of ["PoseidonT2", "PoseidonT3", "PoseidonT4"]) expect(names.some((name) => name.startsWith(`${library} bytecode at`)), library).to.equal(true);
  });
});
