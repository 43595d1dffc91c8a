import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS } from "@x402/evm";
import { computeChannelId } from "@x402/evm/batch-settlement/client";
import { expect } from "chai";
import { TypedDataEncoder, ZeroAddress, ZeroHash } from "ethers";
import { network } from "hardhat";
import { MULTICALL3_ADDRESS, placeBatchSettlementPeer } from "../../x402-peers/batch-settlement.js";
import { channelDomain, depositCollectorData, signClaimBatch, signRefund, signVoucher, type ChannelConfig, type ClaimRow } from "./helpers/channels.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture, time } = networkHelpers;

const DEPOSIT = 100_000n;
const WITHDRAW_DELAY = 900;

/** A channel of `payer` with `receiver`, vouchers signed by a key of its own, funded with DEPOSIT. */
async function fundedChannel() {
  const [owner, payer, tabKey, receiver, receiverAuthorizer, otherReceiver, stranger] = await ethers.getSigners();
  const usdc = await ethers.deployContract("TestUSDC", [owner!.address]);
  await usdc.mint(payer!.address, 10n * DEPOSIT);
  const { settlement, collector, multicall } = await placeBatchSettlementPeer(ethers);
  const chainId = (await ethers.provider.getNetwork()).chainId;
  const configFor = (overrides: Partial<ChannelConfig> = {}): ChannelConfig => ({
    payer: payer!.address,
    payerAuthorizer: tabKey!.address,
    receiver: receiver!.address,
    receiverAuthorizer: receiverAuthorizer!.address,
    token: usdc.target as string,
    withdrawDelay: WITHDRAW_DELAY,
    salt: ZeroHash,
    ...overrides,
  });
  const deposit = async (config: ChannelConfig, amount = DEPOSIT) => {
    const channelId = await settlement.getChannelId(config);
    const validBefore = BigInt(await time.latest()) + 3600n;
    return settlement.connect(stranger).deposit(config, amount, collector, await depositCollectorData(payer!, usdc, channelId, amount, validBefore));
  };
  const config = configFor();
  const channelId = await settlement.getChannelId(config);
  await deposit(config);
  /** A claim row of `config`'s voucher for `maxClaimableAmount`, signed by `signer` (the tab's key unless named). */
  const rowOf = async (maxClaimableAmount: bigint, totalClaimed = maxClaimableAmount, rowConfig = config, signer = tabKey!): Promise<ClaimRow> => ({
    voucher: { channel: rowConfig, maxClaimableAmount },
    signature: await signVoucher(signer, chainId, await settlement.getChannelId(rowConfig), maxClaimableAmount),
    totalClaimed,
  });
  return {
    usdc, settlement, collector, multicall, chainId, config, channelId, configFor, deposit, rowOf,
    accounts: { owner: owner!, payer: payer!, tabKey: tabKey!, receiver: receiver!, receiverAuthorizer: receiverAuthorizer!, otherReceiver: otherReceiver!, stranger: stranger! },
  };
}

type Channel = Awaited<ReturnType<typeof fundedChannel>>;

const balances = async ({ usdc, settlement, accounts }: Channel) => ({
  payer: await usdc.balanceOf(accounts.payer),
  receiver: await usdc.balanceOf(accounts.receiver),
  settlement: await usdc.balanceOf(settlement),
});

describe("X402BatchSettlement, our test peer of x402's batch-settlement contract", function () {
  it("sits where @x402/evm expects it and derives the channel id and digests @x402/evm signs", async function () {
    const { settlement, config, channelId, chainId } = await loadFixture(fundedChannel);
    expect(await settlement.getAddress()).to.equal(BATCH_SETTLEMENT_ADDRESS);
    expect(channelId).to.equal(computeChannelId(config as Parameters<typeof computeChannelId>[0], Number(chainId)));
    const voucherTypes = { Voucher: [{ name: "channelId", type: "bytes32" }, { name: "maxClaimableAmount", type: "uint128" }] };
    expect(await settlement.getVoucherDigest(channelId, 7n)).to.equal(
      TypedDataEncoder.hash(channelDomain(chainId), voucherTypes, { channelId, maxClaimableAmount: 7n }),
    );
  });

  describe("deposit", function () {
    it("moves the payer's authorized deposit into the channel", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, channelId, usdc, accounts } = channel;
      expect(await settlement.channels(channelId)).to.deep.equal([DEPOSIT, 0n]);
      expect(await usdc.balanceOf(settlement)).to.equal(DEPOSIT);
      expect(await usdc.balanceOf(accounts.payer)).to.equal(9n * DEPOSIT);
      await expect(channel.deposit(channel.config, 5n)).to.emit(settlement, "Deposited").withArgs(channelId, accounts.stranger.address, 5n, DEPOSIT + 5n);
    });

    it("refuses a deposit authorization presented twice", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, collector, usdc, config, channelId, accounts } = channel;
      const data = await depositCollectorData(accounts.payer, usdc, channelId, DEPOSIT, BigInt(await time.latest()) + 3600n);
      await settlement.deposit(config, DEPOSIT, collector, data);
      const before = await balances(channel);
      await expect(settlement.deposit(config, DEPOSIT, collector, data)).to.be.revertedWithCustomError(usdc, "AuthorizationUsedOrCanceled");
      expect(await balances(channel)).to.deep.equal(before);
    });

    it("refuses a deposit authorization made for another channel or amount", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, collector, usdc, channelId, accounts } = channel;
      const data = await depositCollectorData(accounts.payer, usdc, channelId, DEPOSIT, BigInt(await time.latest()) + 3600n);
      const before = await balances(channel);
      const otherSeller = channel.configFor({ receiver: accounts.otherReceiver.address });
      await expect(settlement.deposit(otherSeller, DEPOSIT, collector, data)).to.be.revertedWithCustomError(usdc, "InvalidSignature");
      await expect(settlement.deposit(channel.config, DEPOSIT + 1n, collector, data)).to.be.revertedWithCustomError(usdc, "InvalidSignature");
      expect(await balances(channel)).to.deep.equal(before);
    });

    it("refuses a withdraw delay outside 15 minutes to 30 days, and a zero deposit", async function () {
      const { settlement, collector, configFor } = await loadFixture(fundedChannel);
      for (const withdrawDelay of [899, 2_592_001]) {
        await expect(settlement.deposit(configFor({ withdrawDelay }), DEPOSIT, collector, "0x")).to.be.revertedWithCustomError(settlement, "WithdrawDelayOutOfRange");
      }
      await expect(settlement.deposit(configFor(), 0n, collector, "0x")).to.be.revertedWithCustomError(settlement, "ZeroAmount");
    });

    it("refuses a collector that does not deliver the deposit", async function () {
      const { settlement, config } = await loadFixture(fundedChannel);
      const idle = await ethers.deployContract("IdleDepositCollector");
      await expect(settlement.deposit(config, DEPOSIT, idle, "0x")).to.be.revertedWithCustomError(settlement, "DepositNotReceived");
    });

    it("collector: serves only the settlement contract, so a signed authorization pays no one who presents it", async function () {
      const channel = await loadFixture(fundedChannel);
      const { collector, usdc, channelId, accounts } = channel;
      expect(await collector.getAddress()).to.equal(ERC3009_DEPOSIT_COLLECTOR_ADDRESS);
      const data = await depositCollectorData(accounts.payer, usdc, channelId, DEPOSIT, BigInt(await time.latest()) + 3600n);
      await expect(collector.connect(accounts.stranger).collect(accounts.payer, usdc, DEPOSIT, channelId, data)).to.be.revertedWithCustomError(
        collector,
        "CallerNotSettlement",
      );
      expect(await usdc.balanceOf(accounts.payer)).to.equal(9n * DEPOSIT);
    });
  });

  describe("claim and settle", function () {
    it("claims a voucher and settles it to the receiver once, however often it is claimed", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, channelId, usdc, accounts } = channel;
      const row = await channel.rowOf(3_000n);
      await expect(settlement.connect(accounts.receiver).claim([row])).to.emit(settlement, "Claimed").withArgs(channelId, 3_000n, 3_000n);
      await settlement.connect(accounts.receiverAuthorizer).claim([row]);
      expect(await settlement.channels(channelId)).to.deep.equal([DEPOSIT, 3_000n]);
      expect(await settlement.receivers(accounts.receiver, usdc)).to.deep.equal([3_000n, 0n]);

      await expect(settlement.connect(accounts.stranger).settle(accounts.receiver, usdc))
        .to.emit(settlement, "Settled")
        .withArgs(accounts.receiver.address, usdc.target, accounts.stranger.address, 3_000n);
      await settlement.settle(accounts.receiver, usdc);
      expect(await usdc.balanceOf(accounts.receiver)).to.equal(3_000n);
      expect(await usdc.balanceOf(settlement)).to.equal(DEPOSIT - 3_000n);
    });

    it("claims nothing more for an older, lower voucher replayed after a higher one", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, channelId, accounts } = channel;
      const older = await channel.rowOf(3_000n);
      await settlement.connect(accounts.receiver).claim([await channel.rowOf(5_000n)]);
      await expect(settlement.connect(accounts.receiver).claim([older])).not.to.emit(settlement, "Claimed");
      expect(await settlement.channels(channelId)).to.deep.equal([DEPOSIT, 5_000n]);
    });

    it("claims at most the voucher's ceiling, and at most the deposit whatever the voucher says", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, channelId, accounts } = channel;
      const receiverSide = settlement.connect(accounts.receiver);
      await expect(receiverSide.claim([await channel.rowOf(3_000n, 3_001n)])).to.be.revertedWithCustomError(settlement, "ClaimExceedsVoucher");
      await expect(receiverSide.claim([await channel.rowOf(DEPOSIT + 1n)])).to.be.revertedWithCustomError(settlement, "ClaimExceedsBalance");
      await receiverSide.claim([await channel.rowOf(DEPOSIT + 1n, DEPOSIT)]);
      expect(await settlement.channels(channelId)).to.deep.equal([DEPOSIT, DEPOSIT]);
    });

    it("refuses a voucher signed by anyone but the payerAuthorizer, the payer included", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, accounts } = channel;
      for (const signer of [accounts.payer, accounts.receiver]) {
        await expect(settlement.connect(accounts.receiver).claim([await channel.rowOf(3_000n, 3_000n, channel.config, signer)])).to.be.revertedWithCustomError(
          settlement,
          "InvalidVoucherSignature",
        );
      }
    });

    it("refuses a voucher moved to another tab of the same key or to another seller", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, channelId, usdc, accounts, configFor } = channel;
      const otherTab = configFor({ salt: "0x" + "01".padStart(64, "0") });
      const otherSeller = configFor({ receiver: accounts.otherReceiver.address });
      await channel.deposit(otherTab);
      await channel.deposit(otherSeller);
      const voucher = await signVoucher(accounts.tabKey, channel.chainId, channelId, 3_000n);
      for (const [moved, sender] of [[otherTab, accounts.receiver], [otherSeller, accounts.otherReceiver]] as const) {
        const row = { voucher: { channel: moved, maxClaimableAmount: 3_000n }, signature: voucher, totalClaimed: 3_000n };
        await expect(settlement.connect(sender).claim([row])).to.be.revertedWithCustomError(settlement, "InvalidVoucherSignature");
        expect(await settlement.channels(await settlement.getChannelId(moved))).to.deep.equal([DEPOSIT, 0n]);
      }
      expect(await settlement.receivers(accounts.otherReceiver, usdc)).to.deep.equal([0n, 0n]);
    });

    it("checks the payer's own signature when the channel has no payerAuthorizer", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, accounts, configFor } = channel;
      const payerSigned = configFor({ payerAuthorizer: ZeroAddress });
      await channel.deposit(payerSigned);
      await settlement.connect(accounts.receiver).claim([await channel.rowOf(2_000n, 2_000n, payerSigned, accounts.payer)]);
      expect(await settlement.channels(await settlement.getChannelId(payerSigned))).to.deep.equal([DEPOSIT, 2_000n]);
      await expect(settlement.connect(accounts.receiver).claim([await channel.rowOf(3_000n, 3_000n, payerSigned, accounts.tabKey)])).to.be.revertedWithCustomError(
        settlement,
        "InvalidVoucherSignature",
      );
    });

    it("refuses an unsigned claim sent by anyone but the receiver or its authorizer", async function () {
      const channel = await loadFixture(fundedChannel);
      for (const sender of [channel.accounts.stranger, channel.accounts.payer, channel.accounts.tabKey]) {
        await expect(channel.settlement.connect(sender).claim([await channel.rowOf(3_000n)])).to.be.revertedWithCustomError(channel.settlement, "NotReceiverSide");
      }
    });

    it("claimWithSignature: anyone relays the receiverAuthorizer's batch, and nothing else", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, channelId, chainId, accounts, configFor } = channel;
      const row = await channel.rowOf(4_000n);
      const entry = { channelId, maxClaimableAmount: 4_000n, totalClaimed: 4_000n };
      const stranger = settlement.connect(accounts.stranger);
      await expect(stranger.claimWithSignature([], "0x")).to.be.revertedWithCustomError(settlement, "EmptyClaims");
      await expect(stranger.claimWithSignature([row], await signClaimBatch(accounts.stranger, chainId, [entry]))).to.be.revertedWithCustomError(
        settlement,
        "InvalidAuthorizerSignature",
      );
      const raised = await signClaimBatch(accounts.receiverAuthorizer, chainId, [{ ...entry, totalClaimed: 3_000n }]);
      await expect(stranger.claimWithSignature([row], raised)).to.be.revertedWithCustomError(settlement, "InvalidAuthorizerSignature");
      const otherAuthorizer = configFor({ receiverAuthorizer: accounts.stranger.address });
      await channel.deposit(otherAuthorizer);
      const mixed = [row, await channel.rowOf(1_000n, 1_000n, otherAuthorizer)];
      await expect(stranger.claimWithSignature(mixed, "0x")).to.be.revertedWithCustomError(settlement, "MixedReceiverAuthorizers");

      await stranger.claimWithSignature([row], await signClaimBatch(accounts.receiverAuthorizer, chainId, [entry]));
      expect(await settlement.channels(channelId)).to.deep.equal([DEPOSIT, 4_000n]);
    });
  });

  describe("refund", function () {
    it("returns the unclaimed rest to the payer, and no voucher claims from it afterwards", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, channelId, usdc, accounts } = channel;
      await settlement.connect(accounts.receiver).claim([await channel.rowOf(3_000n)]);
      const lateVoucher = await channel.rowOf(5_000n);
      await expect(settlement.connect(accounts.receiver).refund(channel.config, DEPOSIT))
        .to.emit(settlement, "Refunded")
        .withArgs(channelId, DEPOSIT - 3_000n, 0n);
      expect(await usdc.balanceOf(accounts.payer)).to.equal(9n * DEPOSIT + DEPOSIT - 3_000n);
      expect(await settlement.channels(channelId)).to.deep.equal([3_000n, 3_000n]);
      expect(await settlement.refundNonce(channelId)).to.equal(1n);
      await expect(settlement.connect(accounts.receiver).claim([lateVoucher])).to.be.revertedWithCustomError(settlement, "ClaimExceedsBalance");
      await settlement.settle(accounts.receiver, usdc);
      expect(await usdc.balanceOf(accounts.receiver)).to.equal(3_000n);
      expect(await usdc.balanceOf(settlement)).to.equal(0n);
    });

    it("closes a channel it drains before any claim, and advances the nonce even when nothing is left", async function () {
      const { settlement, channelId, config, accounts } = await loadFixture(fundedChannel);
      await expect(settlement.connect(accounts.receiverAuthorizer).refund(config, DEPOSIT)).to.emit(settlement, "ChannelClosed");
      await expect(settlement.connect(accounts.receiver).refund(config, 1n)).not.to.emit(settlement, "Refunded");
      expect(await settlement.refundNonce(channelId)).to.equal(2n);
    });

    it("refuses an unsigned refund sent by anyone but the receiver or its authorizer", async function () {
      const { settlement, config, accounts } = await loadFixture(fundedChannel);
      for (const sender of [accounts.stranger, accounts.payer, accounts.tabKey]) {
        await expect(settlement.connect(sender).refund(config, DEPOSIT)).to.be.revertedWithCustomError(settlement, "NotReceiverSide");
      }
    });

    it("refundWithSignature: anyone relays the receiverAuthorizer's refund, once, for its amount", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, channelId, chainId, config, usdc, accounts } = channel;
      const signature = await signRefund(accounts.receiverAuthorizer, chainId, channelId, 0n, 40_000n);
      const stranger = settlement.connect(accounts.stranger);
      await expect(stranger.refundWithSignature(config, 50_000n, 0n, signature)).to.be.revertedWithCustomError(settlement, "InvalidAuthorizerSignature");
      await expect(
        stranger.refundWithSignature(config, 40_000n, 0n, await signRefund(accounts.stranger, chainId, channelId, 0n, 40_000n)),
      ).to.be.revertedWithCustomError(settlement, "InvalidAuthorizerSignature");
      await stranger.refundWithSignature(config, 40_000n, 0n, signature);
      await expect(stranger.refundWithSignature(config, 40_000n, 0n, signature))
        .to.be.revertedWithCustomError(settlement, "InvalidRefundNonce")
        .withArgs(1n);
      expect(await usdc.balanceOf(accounts.payer)).to.equal(9n * DEPOSIT + 40_000n);
      expect(await settlement.channels(channelId)).to.deep.equal([DEPOSIT - 40_000n, 0n]);
    });

    it("claims and refunds in one multicall, as @x402/evm's facilitator sends a refund", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, channelId, chainId, config, usdc, accounts } = channel;
      const row = await channel.rowOf(6_000n);
      const claimSignature = await signClaimBatch(accounts.receiverAuthorizer, chainId, [{ channelId, maxClaimableAmount: 6_000n, totalClaimed: 6_000n }]);
      const refundSignature = await signRefund(accounts.receiverAuthorizer, chainId, channelId, 0n, DEPOSIT - 6_000n);
      await settlement.connect(accounts.stranger).multicall([
        settlement.interface.encodeFunctionData("claimWithSignature", [[row], claimSignature]),
        settlement.interface.encodeFunctionData("refundWithSignature", [config, DEPOSIT - 6_000n, 0n, refundSignature]),
      ]);
      expect(await settlement.channels(channelId)).to.deep.equal([6_000n, 6_000n]);
      expect(await usdc.balanceOf(accounts.payer)).to.equal(10n * DEPOSIT - 6_000n);
    });
  });

  describe("timed withdrawal", function () {
    it("returns what the receiver left unclaimed to the payer after the withdraw delay, started by the payerAuthorizer", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, channelId, config, usdc, accounts } = channel;
      const tab = settlement.connect(accounts.tabKey);
      await tab.initiateWithdraw(config, DEPOSIT);
      await expect(tab.finalizeWithdraw(config)).to.be.revertedWithCustomError(settlement, "WithdrawDelayNotElapsed");
      await settlement.connect(accounts.receiver).claim([await channel.rowOf(2_000n)]);
      await time.increase(WITHDRAW_DELAY);
      await expect(tab.finalizeWithdraw(config)).to.emit(settlement, "Withdrawn").withArgs(channelId, DEPOSIT - 2_000n);
      expect(await usdc.balanceOf(accounts.payer)).to.equal(10n * DEPOSIT - 2_000n);
      expect(await settlement.pendingWithdrawals(channelId)).to.deep.equal([0n, 0n]);
      await expect(tab.finalizeWithdraw(config)).to.be.revertedWithCustomError(settlement, "NoPendingWithdrawal");
    });

    it("lets only the payer side withdraw, at most the unclaimed balance, one withdrawal at a time", async function () {
      const channel = await loadFixture(fundedChannel);
      const { settlement, config, accounts } = channel;
      for (const sender of [accounts.receiver, accounts.receiverAuthorizer, accounts.stranger]) {
        await expect(settlement.connect(sender).initiateWithdraw(config, 1n)).to.be.revertedWithCustomError(settlement, "NotPayerSide");
      }
      const payer = settlement.connect(accounts.payer);
      await expect(payer.finalizeWithdraw(config)).to.be.revertedWithCustomError(settlement, "NoPendingWithdrawal");
      await expect(payer.initiateWithdraw(config, 0n)).to.be.revertedWithCustomError(settlement, "ZeroAmount");
      await settlement.connect(accounts.receiver).claim([await channel.rowOf(1_000n)]);
      await expect(payer.initiateWithdraw(config, DEPOSIT - 999n)).to.be.revertedWithCustomError(settlement, "WithdrawExceedsUnclaimed");
      await payer.initiateWithdraw(config, 10_000n);
      await expect(payer.initiateWithdraw(config, 10_000n)).to.be.revertedWithCustomError(settlement, "WithdrawAlreadyPending");
      await time.increase(WITHDRAW_DELAY);
      await expect(settlement.connect(accounts.stranger).finalizeWithdraw(config)).to.be.revertedWithCustomError(settlement, "NotPayerSide");
    });

    it("shrinks a pending withdrawal by a refund, and drops it when the refund covers it", async function () {
      const { settlement, channelId, config, accounts } = await loadFixture(fundedChannel);
      await settlement.connect(accounts.payer).initiateWithdraw(config, 30_000n);
      await settlement.connect(accounts.receiver).refund(config, 10_000n);
      expect((await settlement.pendingWithdrawals(channelId))[0]).to.equal(20_000n);
      await settlement.connect(accounts.receiver).refund(config, 20_000n);
      expect(await settlement.pendingWithdrawals(channelId)).to.deep.equal([0n, 0n]);
    });
  });

  it("Multicall3.tryAggregate reports a failed call, or reverts on one when asked to", async function () {
    const { multicall, settlement, channelId } = await loadFixture(fundedChannel);
    expect(await multicall.getAddress()).to.equal(MULTICALL3_ADDRESS);
    const calls = [
      { target: settlement.target, callData: settlement.interface.encodeFunctionData("channels", [channelId]) },
      { target: settlement.target, callData: "0xdeadbeef" },
    ];
    const results = await multicall.tryAggregate.staticCall(false, calls);
    expect(results.map((result) => result.success)).to.deep.equal([true, false]);
    await expect(multicall.tryAggregate.staticCall(true, calls)).to.be.revertedWithCustomError(multicall, "CallFailed").withArgs(1n);
  });
});
