import { expect } from "chai";
import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { network } from "hardhat";
import { readAddressBook, writeAddressBook } from "../../lib/address-book.js";
import { deployFacilitator } from "../../scripts/deploy/deploy-facilitator.js";
import { CIRCLE_USDC, MissingUsdcError } from "../../scripts/deploy/usdc.js";
import { deployedFacilitator } from "./helpers/fixtures.js";

const { ethers, networkHelpers } = await network.create();

describe("deployment", function () {
  it("records the contracts, scope, start block and roles in an address book that reads back", async function () {
    const { addressBook, entrypoint, privacyPool, usdc, accounts } =
      await networkHelpers.loadFixture(deployedFacilitator);
    const [registration] = await entrypoint.queryFilter(entrypoint.filters.PoolRegistered());

    expect(addressBook).to.deep.include({
      chainId: 31337,
      entrypoint: await entrypoint.getAddress(),
      privacyPool: await privacyPool.getAddress(),
      usdc: await usdc.getAddress(),
      batchVerifier: await privacyPool.WITHDRAWAL_BATCH_VERIFIER(),
      scope: await privacyPool.SCOPE(),
      deployer: accounts.admin.address,
      postman: accounts.postman.address,
    });
    expect(registration?.blockNumber).to.be.greaterThan(addressBook.startBlock);
    for (const library of Object.values(addressBook.poseidon)) {
      expect(await ethers.provider.getCode(library)).to.not.equal("0x");
    }

    const dir = await mkdtemp(path.join(tmpdir(), "address-book-"));
    await writeAddressBook(addressBook, dir);
    expect(await readAddressBook(addressBook.chainId, dir)).to.deep.equal(addressBook);
    expect(await readAddressBook(1, dir)).to.equal(undefined);
  });

  it("makes the deployer the access-fee treasury unless told otherwise, and grants no role beyond the admin's and the postman's", async function () {
    const { entrypoint, accounts } = await networkHelpers.loadFixture(deployedFacilitator);
    expect(await entrypoint.accessFeeTreasury()).to.equal(accounts.admin.address);
    const granted = await entrypoint.queryFilter(entrypoint.filters.RoleGranted());
    const roles = new Set(granted.map((event) => event.args.role));
    expect(roles).to.deep.equal(new Set([await entrypoint.DEFAULT_ADMIN_ROLE(), await entrypoint.POSTMAN_ROLE()]));
  });

  it("deploys TestUSDC, minted by the deployer, on a chain without Circle's USDC", async function () {
    const { usdc, accounts } = await networkHelpers.loadFixture(deployedFacilitator);
    expect(await usdc.owner()).to.equal(accounts.admin.address);
    expect(await usdc.name()).to.equal("USDC");
  });

  it("uses Circle's USDC on a local fork, found by its code at the Base Sepolia address", async function () {
    const fork = await network.create();
    const circleUsdc = CIRCLE_USDC[84532]!;
    const { usdc } = await networkHelpers.loadFixture(deployedFacilitator);
    await fork.networkHelpers.setCode(circleUsdc, await ethers.provider.getCode(usdc));

    const { addressBook, privacyPool } = await deployFacilitator(fork);
    expect(addressBook.usdc).to.equal(circleUsdc);
    expect(await privacyPool.ASSET()).to.equal(circleUsdc);
  });

  it("refuses on Base's chain id, sending nothing, unless Circle's USDC of Base has code: no TestUSDC, no other chain's token", async function () {
    const base = await network.create({ override: { chainId: 8453 } });
    const [deployer] = await base.ethers.getSigners();
    const { usdc } = await networkHelpers.loadFixture(deployedFacilitator);
    const tokenCode = await ethers.provider.getCode(usdc);

    const missing = (error: unknown) => error instanceof MissingUsdcError && error.message.includes(`Circle's USDC (${CIRCLE_USDC[8453]}) has no code on it`);
    await assert.rejects(deployFacilitator(base), missing);
    await base.networkHelpers.setCode(CIRCLE_USDC[84532]!, tokenCode);
    await assert.rejects(deployFacilitator(base), missing);
    expect(await base.ethers.provider.getTransactionCount(deployer!)).to.equal(0);

    await base.networkHelpers.setCode(CIRCLE_USDC[8453]!, tokenCode);
    const { addressBook } = await deployFacilitator(base);
    expect(addressBook.usdc).to.equal(CIRCLE_USDC[8453]);
  });

  it("gives the postman role to the postman it is told", async function () {
    const chain = await network.create();
    const [, postman] = await chain.ethers.getSigners();
    const { entrypoint, addressBook } = await deployFacilitator(chain, { postman: postman!.address });

    expect(addressBook.postman).to.equal(postman!.address);
    expect(await entrypoint.hasRole(await entrypoint.POSTMAN_ROLE(), postman!)).to.equal(true);
  });

  it("sets the access-fee treasury it is told", async function () {
    const chain = await network.create();
    const [, treasury] = await chain.ethers.getSigners();
    const { entrypoint } = await deployFacilitator(chain, { accessFeeTreasury: treasury!.address });
    expect(await entrypoint.accessFeeTreasury()).to.equal(treasury!.address);
  });
});
