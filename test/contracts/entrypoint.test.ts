import { expect } from "chai";
import type { AddressLike } from "ethers";
import { network } from "hardhat";
import { deployedFacilitator, type DeployedFacilitator } from "./helpers/fixtures.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture } = networkHelpers;

const ONE_USDC = 1_000_000n;

/** A PrivacyPool linked to the deployment's Poseidon libraries, with its batch verifier unless told otherwise. */
async function deployPool(
  { addressBook }: DeployedFacilitator,
  entrypoint: AddressLike,
  asset: AddressLike,
  batchVerifier: AddressLike = addressBook.batchVerifier,
) {
  const factory = await ethers.getContractFactory("PrivacyPool", { libraries: addressBook.poseidon });
  return factory.deploy(entrypoint, batchVerifier, asset);
}

describe("entrypoint", function () {
  describe("pool registry", function () {
    it("registers the USDC pool at deployment with a 1 USDC minimum deposit and a 500 bps maximum fee", async function () {
      const { entrypoint, privacyPool, usdc, scope } = await loadFixture(deployedFacilitator);
      const config = await entrypoint.assetConfig(usdc);

      expect(config.pool).to.equal(await privacyPool.getAddress());
      expect(config.minimumDepositAmount).to.equal(ONE_USDC);
      expect(config.maxRelayFeeBPS).to.equal(500n);
      expect(await entrypoint.poolByScope(scope)).to.equal(await privacyPool.getAddress());
      expect(await privacyPool.ENTRYPOINT()).to.equal(await entrypoint.getAddress());
      expect(await privacyPool.ASSET()).to.equal(await usdc.getAddress());
    });

    it("registers a pool for another asset", async function () {
      const facilitator = await loadFixture(deployedFacilitator);
      const { entrypoint, accounts } = facilitator;
      const asset = await ethers.deployContract("TestUSDC", [accounts.admin]);
      const pool = await deployPool(facilitator, entrypoint, asset);
      const scope = await pool.SCOPE();

      await expect(entrypoint.registerPool(asset, pool, 2n * ONE_USDC, 100n))
        .to.emit(entrypoint, "PoolRegistered")
        .withArgs(await asset.getAddress(), await pool.getAddress(), scope, 2n * ONE_USDC, 100n);
      expect(await entrypoint.poolByScope(scope)).to.equal(await pool.getAddress());
    });

    it("lets only the admin register a pool", async function () {
      const facilitator = await loadFixture(deployedFacilitator);
      const { entrypoint, accounts } = facilitator;
      const asset = await ethers.deployContract("TestUSDC", [accounts.admin]);
      const pool = await deployPool(facilitator, entrypoint, asset);

      // A postman that is not also admin cannot register either.
      await entrypoint.grantRole(await entrypoint.POSTMAN_ROLE(), accounts.stranger);

      await expect(entrypoint.connect(accounts.stranger).registerPool(asset, pool, ONE_USDC, 0n))
        .to.be.revertedWithCustomError(entrypoint, "AccessControlUnauthorizedAccount")
        .withArgs(accounts.stranger.address, await entrypoint.DEFAULT_ADMIN_ROLE());
    });

    it("rejects a second pool for an asset that has one", async function () {
      const facilitator = await loadFixture(deployedFacilitator);
      const { entrypoint, usdc } = facilitator;
      const pool = await deployPool(facilitator, entrypoint, usdc);

      await expect(entrypoint.registerPool(usdc, pool, ONE_USDC, 0n)).to.be.revertedWithCustomError(
        entrypoint,
        "AssetAlreadyRegistered",
      );
    });

    it("rejects a pool registered for an asset it does not pool", async function () {
      const facilitator = await loadFixture(deployedFacilitator);
      const { entrypoint, usdc, accounts } = facilitator;
      const asset = await ethers.deployContract("TestUSDC", [accounts.admin]);
      const usdcPool = await deployPool(facilitator, entrypoint, usdc);

      await expect(entrypoint.registerPool(asset, usdcPool, ONE_USDC, 0n)).to.be.revertedWithCustomError(
        entrypoint,
        "PoolAssetMismatch",
      );
    });

    it("rejects a maximum relay fee above 100%", async function () {
      const facilitator = await loadFixture(deployedFacilitator);
      const { entrypoint, accounts } = facilitator;
      const asset = await ethers.deployContract("TestUSDC", [accounts.admin]);
      const pool = await deployPool(facilitator, entrypoint, asset);

      await expect(entrypoint.registerPool(asset, pool, ONE_USDC, 10_001n)).to.be.revertedWithCustomError(
        entrypoint,
        "MaxRelayFeeAboveDenominator",
      );
    });

    it("rejects a zero asset or pool address", async function () {
      const { entrypoint, privacyPool, usdc } = await loadFixture(deployedFacilitator);

      const registrations: [AddressLike, AddressLike][] = [
        [ethers.ZeroAddress, privacyPool],
        [usdc, ethers.ZeroAddress],
      ];
      for (const [asset, pool] of registrations) {
        await expect(entrypoint.registerPool(asset, pool, ONE_USDC, 0n)).to.be.revertedWithCustomError(
          entrypoint,
          "ZeroAddress",
        );
      }
    });

    it("rejects zero addresses in the Entrypoint and PrivacyPool constructors", async function () {
      const facilitator = await loadFixture(deployedFacilitator);
      const { entrypoint, usdc, accounts } = facilitator;
      const zero = ethers.ZeroAddress;

      for (const [owner, postman] of [
        [zero, accounts.postman.address],
        [accounts.admin.address, zero],
      ]) {
        await expect(ethers.deployContract("Entrypoint", [owner, postman])).to.be.revertedWithCustomError(
          entrypoint,
          "ZeroAddress",
        );
      }
      const { batchVerifier } = facilitator.addressBook;
      const poolArgs: [AddressLike, AddressLike, AddressLike][] = [
        [zero, usdc, batchVerifier],
        [entrypoint, zero, batchVerifier],
        [entrypoint, usdc, zero],
      ];
      for (const [poolEntrypoint, asset, poolBatchVerifier] of poolArgs) {
        await expect(deployPool(facilitator, poolEntrypoint, asset, poolBatchVerifier)).to.be.revertedWithCustomError(
          facilitator.privacyPool,
          "ZeroAddress",
        );
      }
    });
  });

  describe("ASP roots", function () {
    it("publishes a root from the postman with its CID and timestamp", async function () {
      const { entrypoint, accounts } = await loadFixture(deployedFacilitator);
      expect(await entrypoint.latestRoot()).to.equal(0n);

      const update = entrypoint.connect(accounts.postman).updateRoot(777n, 5n, "bafy-root-777");
      await expect(update)
        .to.emit(entrypoint, "RootUpdated")
        .withArgs(777n, 5n, "bafy-root-777", (await networkHelpers.time.latest()) + 1, false);
      expect(await entrypoint.latestRoot()).to.equal(777n);
      expect(await entrypoint.isKnownAspRoot(777n)).to.equal(true);
      expect(await entrypoint.aspTreeDepthAt(777n)).to.equal(5n);
    });

    it("lets only the postman publish a root", async function () {
      const { entrypoint, accounts } = await loadFixture(deployedFacilitator);
      await expect(entrypoint.connect(accounts.stranger).updateRoot(777n, 0n, "bafy-root-777"))
        .to.be.revertedWithCustomError(entrypoint, "AccessControlUnauthorizedAccount")
        .withArgs(accounts.stranger.address, await entrypoint.POSTMAN_ROLE());
    });

    it("lets the admin make another account the postman", async function () {
      const { entrypoint, accounts } = await loadFixture(deployedFacilitator);
      await entrypoint.grantRole(await entrypoint.POSTMAN_ROLE(), accounts.stranger);

      await expect(entrypoint.connect(accounts.stranger).updateRoot(777n, 0n, "bafy-root-777")).to.emit(
        entrypoint,
        "RootUpdated",
      );
    });

    it("rejects a zero root, which would read as an empty slot of the history", async function () {
      const { entrypoint } = await loadFixture(deployedFacilitator);
      await expect(entrypoint.updateRoot(0n, 0n, "bafy-empty")).to.be.revertedWithCustomError(entrypoint, "ZeroAspRoot");
    });

    it("rejects a depth above the circuit's maximum", async function () {
      const { entrypoint } = await loadFixture(deployedFacilitator);
      const tooDeep = (await entrypoint.MAX_TREE_DEPTH()) + 1n;
      await expect(entrypoint.updateRoot(777n, tooDeep, "bafy-deep")).to.be.revertedWithCustomError(
        entrypoint,
        "AspTreeDepthAboveMaximum",
      );
      await expect(entrypoint.revokeAndUpdateRoot(777n, tooDeep, "bafy-deep", [])).to.be.revertedWithCustomError(
        entrypoint,
        "AspTreeDepthAboveMaximum",
      );
    });

    it("keeps the last ROOT_HISTORY_SIZE roots known, and older ones once ROOT_MIN_LIFETIME_BLOCKS have passed", async function () {
      const { entrypoint } = await loadFixture(deployedFacilitator);
      const window = await entrypoint.ROOT_HISTORY_SIZE();
      for (let root = 1n; root <= window + 1n; root++) await entrypoint.updateRoot(root, 0n, `bafy-${root}`);
      expect(await entrypoint.isKnownAspRoot(1n), "younger than the minimum lifetime").to.equal(true);
      await networkHelpers.mine(await entrypoint.ROOT_MIN_LIFETIME_BLOCKS());

      expect(await entrypoint.isKnownAspRoot(1n)).to.equal(false);
      expect(await entrypoint.isKnownAspRoot(2n)).to.equal(true);
      expect(await entrypoint.isKnownAspRoot(window + 1n)).to.equal(true);
      expect(await entrypoint.isKnownAspRoot(0n)).to.equal(false);
      expect(await entrypoint.latestRoot()).to.equal(window + 1n);
    });
  });
});
