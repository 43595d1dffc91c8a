import { expect } from "chai";
import { hexlify, randomBytes, type Signer } from "ethers";
import { network } from "hardhat";
import { createNote, nullifierHashOf, precommitmentOf } from "../../sdk/index.js";
import { buildAuthorization, signAuthorization } from "./helpers/authorizations.js";
import { deployedFacilitator, type DeployedFacilitator } from "./helpers/fixtures.js";
import { depositNote, fundDepositor, ragequitNote, secretsFor } from "./helpers/notes.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture } = networkHelpers;

/** Far below the 1 USDC minimum deposit, as an x402 payment a seller refused. */
const REFUND = 50_000n;
const ACCESS_FEE = 1_000n;

/**
 * A note its depositor took back by ragequit (so its nullifier hash is spent), a single-use payer holding REFUND,
 * and the admin as the relaying party with REFUNDER_ROLE.
 */
async function payerWithBalance() {
  const facilitator = await loadFixture(deployedFacilitator);
  const { entrypoint, privacyPool, usdc, accounts } = facilitator;
  const origin = await depositNote(facilitator, accounts.depositor, 1_000_000n, secretsFor(1n));
  await ragequitNote(privacyPool, accounts.depositor, origin);
  const payer = ethers.Wallet.createRandom(ethers.provider);
  await usdc.mint(payer, REFUND);
  await entrypoint.grantRole(await entrypoint.REFUNDER_ROLE(), accounts.admin);
  return { ...facilitator, originNullifierHash: nullifierHashOf(origin.nullifier), payer };
}

/** The payer's ReceiveWithAuthorization of `value` to the entrypoint, as Entrypoint.depositRefund takes it. */
async function refundAuthorization({ entrypoint, usdc }: DeployedFacilitator, payer: Signer, value: bigint) {
  const now = await networkHelpers.time.latest();
  const authorization = buildAuthorization(now, {
    from: await payer.getAddress(),
    to: await entrypoint.getAddress(),
    value,
    nonce: hexlify(randomBytes(32)),
  });
  return { ...authorization, signature: await signAuthorization(payer, usdc, "ReceiveWithAuthorization", authorization) };
}

/** An access-fee treasury set by the admin and a payer who approved the entrypoint for the fee. */
async function accessFeeReady() {
  const facilitator = await loadFixture(deployedFacilitator);
  const { entrypoint, accounts } = facilitator;
  await entrypoint.setAccessFeeTreasury(accounts.feeRecipient);
  await fundDepositor(facilitator, accounts.depositor, ACCESS_FEE);
  return facilitator;
}

describe("refund deposits", function () {
  it("deposits a payer's balance below the minimum as a refund note whose depositor is the payer", async function () {
    const facilitator = await loadFixture(payerWithBalance);
    const { entrypoint, privacyPool, usdc, payer, originNullifierHash } = facilitator;
    const secrets = secretsFor(9n);
    const authorization = await refundAuthorization(facilitator, payer, REFUND);

    const refund = entrypoint.depositRefund(usdc, REFUND, precommitmentOf(secrets), originNullifierHash, authorization);
    await expect(refund).to.changeTokenBalances(ethers, usdc, [payer, privacyPool, entrypoint], [-REFUND, REFUND, 0n]);
    const receipt = await (await refund).wait();
    const deposited = receipt!.logs.map((log) => privacyPool.interface.parseLog(log)).find((event) => event?.name === "Deposited");
    const note = createNote(REFUND, deposited!.args.label as bigint, secrets);
    expect(deposited!.args.depositor).to.equal(payer.address);
    expect(deposited!.args.commitment).to.equal(note.commitment);
    await expect(refund)
      .to.emit(entrypoint, "RefundDeposited")
      .withArgs(payer.address, note.commitment, originNullifierHash, REFUND);
    expect(await privacyPool.depositorOf(note.label)).to.equal(payer.address);
  });

  it("refunds an origin once", async function () {
    const facilitator = await loadFixture(payerWithBalance);
    const { entrypoint, usdc, payer, originNullifierHash } = facilitator;
    await entrypoint.depositRefund(usdc, REFUND / 2n, 1n, originNullifierHash, await refundAuthorization(facilitator, payer, REFUND / 2n));

    const again = await refundAuthorization(facilitator, payer, REFUND / 2n);
    await expect(entrypoint.depositRefund(usdc, REFUND / 2n, 2n, originNullifierHash, again)).to.be.revertedWithCustomError(
      entrypoint,
      "OriginAlreadyRefunded",
    );
  });

  it("lets only the refunder role deposit a refund", async function () {
    const facilitator = await loadFixture(payerWithBalance);
    const { entrypoint, usdc, payer, originNullifierHash, accounts } = facilitator;
    const authorization = await refundAuthorization(facilitator, payer, REFUND);
    await expect(
      entrypoint.connect(accounts.stranger).depositRefund(usdc, REFUND, 1n, originNullifierHash, authorization),
    )
      .to.be.revertedWithCustomError(entrypoint, "AccessControlUnauthorizedAccount")
      .withArgs(accounts.stranger.address, await entrypoint.REFUNDER_ROLE());
  });

  it("refuses a refund naming an origin nullifier hash the pool has not seen spent", async function () {
    const facilitator = await loadFixture(payerWithBalance);
    const { entrypoint, usdc, payer } = facilitator;
    const authorization = await refundAuthorization(facilitator, payer, REFUND);
    await expect(entrypoint.depositRefund(usdc, REFUND, 1n, 12_345n, authorization)).to.be.revertedWithCustomError(
      entrypoint,
      "RefundOriginNotSpent",
    );
  });

  it("refuses a zero refund and an asset without a pool", async function () {
    const facilitator = await loadFixture(payerWithBalance);
    const { entrypoint, usdc, payer, originNullifierHash, accounts } = facilitator;
    const authorization = await refundAuthorization(facilitator, payer, 0n);
    await expect(entrypoint.depositRefund(usdc, 0n, 1n, originNullifierHash, authorization)).to.be.revertedWithCustomError(
      entrypoint,
      "ZeroRefund",
    );
    const other = await ethers.deployContract("TestUSDC", [accounts.admin]);
    await expect(entrypoint.depositRefund(other, REFUND, 1n, originNullifierHash, authorization)).to.be.revertedWithCustomError(
      entrypoint,
      "AssetNotRegistered",
    );
  });

  it("moves nothing without the payer's authorization of exactly that value", async function () {
    const facilitator = await loadFixture(payerWithBalance);
    const { entrypoint, usdc, payer, originNullifierHash, accounts } = facilitator;
    const forOther = await refundAuthorization(facilitator, accounts.stranger, REFUND);
    const tooSmall = await refundAuthorization(facilitator, payer, REFUND - 1n);
    for (const authorization of [{ ...forOther, from: payer.address }, tooSmall]) {
      await expect(entrypoint.depositRefund(usdc, REFUND, 1n, originNullifierHash, authorization)).to.be.revertedWithCustomError(
        usdc,
        "InvalidSignature",
      );
    }
    expect(await usdc.balanceOf(payer)).to.equal(REFUND);
  });
});

describe("access-fee payments", function () {
  it("pulls the fee to the treasury and binds payer, nullifier hash and amount in the event", async function () {
    const { entrypoint, usdc, accounts } = await loadFixture(accessFeeReady);
    const pay = entrypoint.connect(accounts.depositor).payAccessFee(usdc, 777n, ACCESS_FEE);
    await expect(pay).to.changeTokenBalances(ethers, usdc, [accounts.depositor, accounts.feeRecipient], [-ACCESS_FEE, ACCESS_FEE]);
    await expect(pay)
      .to.emit(entrypoint, "AccessFeePaid")
      .withArgs(accounts.depositor.address, 777n, await usdc.getAddress(), ACCESS_FEE, accounts.feeRecipient.address);
  });

  it("refuses a payment before the admin set a treasury", async function () {
    const { usdc, accounts } = await loadFixture(deployedFacilitator);
    const bare = await ethers.deployContract("Entrypoint", [accounts.admin, accounts.admin]);
    await expect(bare.connect(accounts.depositor).payAccessFee(usdc, 777n, ACCESS_FEE)).to.be.revertedWithCustomError(
      bare,
      "AccessFeeTreasuryNotSet",
    );
  });

  it("refuses a zero fee and an asset without a pool", async function () {
    const { entrypoint, usdc, accounts } = await loadFixture(accessFeeReady);
    await expect(entrypoint.connect(accounts.depositor).payAccessFee(usdc, 777n, 0n)).to.be.revertedWithCustomError(
      entrypoint,
      "ZeroAccessFee",
    );
    const other = await ethers.deployContract("TestUSDC", [accounts.admin]);
    await expect(entrypoint.connect(accounts.depositor).payAccessFee(other, 777n, ACCESS_FEE)).to.be.revertedWithCustomError(
      entrypoint,
      "AssetNotRegistered",
    );
  });

  it("lets only the admin set a non-zero treasury", async function () {
    const { entrypoint, accounts } = await loadFixture(deployedFacilitator);
    await expect(entrypoint.connect(accounts.stranger).setAccessFeeTreasury(accounts.stranger))
      .to.be.revertedWithCustomError(entrypoint, "AccessControlUnauthorizedAccount")
      .withArgs(accounts.stranger.address, await entrypoint.DEFAULT_ADMIN_ROLE());
    await expect(entrypoint.setAccessFeeTreasury(ethers.ZeroAddress)).to.be.revertedWithCustomError(entrypoint, "ZeroAddress");
    await expect(entrypoint.setAccessFeeTreasury(accounts.feeRecipient))
      .to.emit(entrypoint, "AccessFeeTreasuryUpdated")
      .withArgs(accounts.feeRecipient.address);
    expect(await entrypoint.accessFeeTreasury()).to.equal(accounts.feeRecipient.address);
  });
});
