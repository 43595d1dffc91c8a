import { expect } from "chai";
import { network } from "hardhat";
import {
  commitmentOf,
  createLeanIMT,
  labelOf,
  NOTE_VALUE_LIMIT,
  precommitmentOf,
  scopeOf,
  type SolidityWithdrawProof,
  WITHDRAW_PUBLIC_SIGNALS,
} from "../../sdk/index.js";
import { deployedFacilitator } from "./helpers/fixtures.js";
import { fundDepositor, secretsFor } from "./helpers/notes.js";

const { ethers, networkHelpers } = await network.create();

const ONE_USDC = 1_000_000n;

describe("deposits", function () {
  it("derives the pool's scope from its address, the chain id and the asset, as the SDK does", async function () {
    const { privacyPool, usdc } = await networkHelpers.loadFixture(deployedFacilitator);
    const { chainId } = await ethers.provider.getNetwork();
    expect(await privacyPool.SCOPE()).to.equal(
      scopeOf(await privacyPool.getAddress(), chainId, await usdc.getAddress()),
    );
  });

  it("pulls the deposited tokens from the depositor into the pool", async function () {
    const facilitator = await networkHelpers.loadFixture(deployedFacilitator);
    const { entrypoint, privacyPool, usdc, accounts } = facilitator;
    await fundDepositor(facilitator, accounts.depositor, 5n * ONE_USDC);

    await expect(
      entrypoint.connect(accounts.depositor).deposit(usdc, 5n * ONE_USDC, precommitmentOf(secretsFor(1n))),
    ).to.changeTokenBalances(
      ethers,
      usdc,
      [accounts.depositor, privacyPool, entrypoint],
      [-5n * ONE_USDC, 5n * ONE_USDC, 0n],
    );
  });

  it("assigns labels by nonce and inserts commitments with events matching a TypeScript LeanIMT", async function () {
    const facilitator = await networkHelpers.loadFixture(deployedFacilitator);
    const { entrypoint, privacyPool, usdc, scope, accounts } = facilitator;
    const tree = createLeanIMT();

    for (const [leafIndex, depositor] of [accounts.depositor, accounts.otherDepositor].entries()) {
      const value = BigInt(leafIndex + 1) * ONE_USDC;
      const precommitment = precommitmentOf(secretsFor(BigInt(leafIndex)));
      const label = labelOf(scope, BigInt(leafIndex + 1));
      const commitment = commitmentOf(value, label, precommitment);
      tree.insert(commitment);
      await fundDepositor(facilitator, depositor, value);

      const deposit = entrypoint.connect(depositor).deposit(usdc, value, precommitment);
      await expect(deposit)
        .to.emit(privacyPool, "Deposited")
        .withArgs(depositor.address, commitment, label, value, precommitment);
      await expect(deposit).to.emit(privacyPool, "LeafInserted").withArgs(leafIndex, commitment, tree.root);
      expect(await privacyPool.depositorOf(label)).to.equal(depositor.address);
    }
    expect(await privacyPool.currentRoot()).to.equal(tree.root);
    expect(await privacyPool.currentTreeSize()).to.equal(2n);
    expect(await privacyPool.currentTreeDepth()).to.equal(1n);
    expect(await privacyPool.isKnownStateRoot(tree.root)).to.equal(true);
    expect(await privacyPool.nonce()).to.equal(2n);
  });

  it("accepts a deposit of exactly the minimum and rejects one atom less", async function () {
    const facilitator = await networkHelpers.loadFixture(deployedFacilitator);
    const { entrypoint, usdc, accounts } = facilitator;
    const depositor = entrypoint.connect(accounts.depositor);
    await fundDepositor(facilitator, accounts.depositor, 2n * ONE_USDC);

    await expect(
      depositor.deposit(usdc, ONE_USDC - 1n, precommitmentOf(secretsFor(1n))),
    ).to.be.revertedWithCustomError(entrypoint, "DepositBelowMinimum");
    await expect(depositor.deposit(usdc, ONE_USDC, precommitmentOf(secretsFor(1n)))).to.emit(
      facilitator.privacyPool,
      "Deposited",
    );
  });

  it("rejects a deposit of an asset without a pool", async function () {
    const { entrypoint, accounts } = await networkHelpers.loadFixture(deployedFacilitator);
    const otherToken = await ethers.deployContract("TestUSDC", [accounts.admin]);

    await expect(
      entrypoint.connect(accounts.depositor).deposit(otherToken, ONE_USDC, precommitmentOf(secretsFor(1n))),
    ).to.be.revertedWithCustomError(entrypoint, "AssetNotRegistered");
  });

  it("rejects a note value of 2^128 or more, which the circuit could never spend", async function () {
    const facilitator = await networkHelpers.loadFixture(deployedFacilitator);
    const { entrypoint, privacyPool, usdc, accounts } = facilitator;
    await fundDepositor(facilitator, accounts.depositor, NOTE_VALUE_LIMIT);

    await expect(
      entrypoint.connect(accounts.depositor).deposit(usdc, NOTE_VALUE_LIMIT, precommitmentOf(secretsFor(1n))),
    ).to.be.revertedWithCustomError(privacyPool, "ValueAboveNoteLimit");
  });

  it("accepts deposits, withdrawals and batches of withdrawals only from the entrypoint", async function () {
    const { privacyPool, accounts } = await networkHelpers.loadFixture(deployedFacilitator);
    const pool = privacyPool.connect(accounts.stranger);
    const proof: SolidityWithdrawProof = {
      pA: [0n, 0n],
      pB: [
        [0n, 0n],
        [0n, 0n],
      ],
      pC: [0n, 0n],
      pubSignals: Array<bigint>(WITHDRAW_PUBLIC_SIGNALS.length).fill(0n),
    };

    const payout = { recipient: accounts.stranger, feeRecipient: accounts.stranger, feeAmount: 0n, spendRecord: ethers.ZeroHash };
    await expect(pool.deposit(accounts.stranger, ONE_USDC, 1n)).to.be.revertedWithCustomError(
      privacyPool,
      "OnlyEntrypoint",
    );
    await expect(
      pool.withdraw(proof, 1n, payout),
    ).to.be.revertedWithCustomError(privacyPool, "OnlyEntrypoint");
    await expect(
      pool.withdrawBatch([proof], [1n], [payout]),
    ).to.be.revertedWithCustomError(privacyPool, "OnlyEntrypoint");
    await expect(pool.depositRefund(1n, ethers.ZeroHash, 1n, 1n)).to.be.revertedWithCustomError(privacyPool, "OnlyEntrypoint");
  });
});
