import { expect } from "chai";
import { getAddress } from "ethers";
import { gasCostInUsdc } from "../../lib/gas-cost.js";
import { feeOf, parseUsdc, relayGasAt, smallestGrossForFee } from "../../relayer/pricing/pricing.js";
import { nullifierHashOf, type Note } from "../../sdk/index.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { buildRelayerConfig, relayerKey, serviceDeposit, startRelayer, treasury, type RunningRelayer } from "./helpers/relayer-harness.js";

/** At the local chain's ~1.1 gwei, 100 USDC/ETH puts the floor near 0.07 USDC: the take reaches it from ~1.3 USDC. */
const USDC_PER_ETH = "100";
const recipient = getAddress("0x000000000000000000000000000000000000f100");
const provider = getAddress("0x000000000000000000000000000000000000f200");

interface WireFloor {
  enforced: boolean;
  stateTreeDepth: number;
  relayGas: string;
  gasPriceWei: string;
  floorAtomic: string;
  smallestWithdrawalAtomic: string;
}

describe("relayer: the fee floor on every spend route, against a local chain with real proofs", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  let paid: RunningRelayer;
  let dbPath: string;
  const notes: Record<"floor" | "routes", Note> = {} as never;

  const usdcBalance = (address: string) => chain.facilitator.usdc.balanceOf(address);
  const accruedFees = (address: string) => chain.facilitator.privacyPool.accruedFeesOf(address);
  const floorNow = async (relayer: RunningRelayer) => {
    const { body } = await relayer.get("/api/facilitator/supported");
    return (body.pricing as { feeFloor: WireFloor }).feeFloor;
  };
  /** Nothing was proven or sent for `note`: no lease was taken, the nullifier is unspent. */
  const expectUntouched = async (relayer: RunningRelayer, note: Note) => {
    const nullifierHash = nullifierHashOf(note.nullifier);
    expect(await relayer.relayer.store.getLease(nullifierHash), "a lease (a proof follows one)").to.equal(undefined);
    expect(await chain.facilitator.privacyPool.isNullifierSpent(nullifierHash)).to.equal(false);
  };

  before(async function () {
    chain = await startLocalChain();
    notes.floor = await deposit(chain, chain.depositors.alice, 301, 3_000_000n);
    notes.routes = await deposit(chain, chain.depositors.bob, 302, 3_000_000n);
    indexer = await startIndexer(buildIndexerConfig(chain));
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    const config = buildRelayerConfig(chain, indexer, { pricingMode: "paid", usdcPerEth: USDC_PER_ETH });
    dbPath = config.dbPath;
    paid = await startRelayer(config);
  });

  after(async function () {
    await paid?.stop();
    await indexer?.stop();
    await chain?.close();
  });

  it("reports the floor in supported: the table's gas at the pool's depth x the gas price, in USDC", async function () {
    const floor = await floorNow(paid);
    const depth = await chain.facilitator.privacyPool.currentTreeDepth();
    expect(floor).to.deep.include({ enforced: true, stateTreeDepth: Number(depth), relayGas: relayGasAt(depth).toString() });
    const expected = gasCostInUsdc(relayGasAt(depth), BigInt(floor.gasPriceWei), parseUsdc(USDC_PER_ETH));
    expect(floor.floorAtomic).to.equal(expected.toString());
    expect(floor.smallestWithdrawalAtomic).to.equal(smallestGrossForFee(expected, 500n)!.toString());
    expect(BigInt(floor.smallestWithdrawalAtomic), "the floor, not the 40000 minimum, binds here").to.be.greaterThan(40_000n);
  });

  it("refuses a one-atom /api/withdraw before any proof, naming the floor and the smallest amount that passes", async function () {
    const floor = await floorNow(paid);
    const relayerEth = await chain.connection.ethers.provider.getBalance(relayerKey.address);
    for (const amountAtomic of ["1", (BigInt(floor.smallestWithdrawalAtomic) - 1n).toString()]) {
      const { status, body } = await paid.post("/api/withdraw", { ...serviceDeposit(notes.floor), recipient, amountAtomic });
      expect(status, JSON.stringify(body)).to.equal(400);
      expect(body).to.deep.include({ settled: false, code: "BELOW_FEE_FLOOR" });
      expect(body.error).to.contain(`the fee floor is ${floor.floorAtomic} atomic`);
      expect(body.error).to.contain(`Withdraw at least ${floor.smallestWithdrawalAtomic} atomic`);
      expect(body.error).to.contain(`state tree depth ${floor.stateTreeDepth}`);
    }
    await expectUntouched(paid, notes.floor);
    expect(await chain.connection.ethers.provider.getBalance(relayerKey.address), "the relaying key spent no gas").to.equal(relayerEth);
  });

  it("lets a withdrawal that pays the floor through, its take covering the relay's gas at the configured price", async function () {
    const floor = await floorNow(paid);
    const amount = BigInt(floor.smallestWithdrawalAtomic);
    const treasuryBefore = await accruedFees(treasury.address);
    const { status, body } = await paid.post("/api/withdraw", { ...serviceDeposit(notes.floor), recipient, amountAtomic: amount.toString() });
    expect(status, JSON.stringify(body)).to.equal(200);
    const fee = feeOf(amount, 500n);
    expect(body).to.deep.include({ withdrawn: true, amount: amount.toString(), fee: fee.toString(), remainingValue: (3_000_000n - amount).toString() });
    expect(fee).to.be.at.least(BigInt(floor.floorAtomic));
    expect(await accruedFees(treasury.address)).to.equal(treasuryBefore + fee);
    expect(await usdcBalance(recipient)).to.equal(amount - fee);

    const receipt = await chain.connection.ethers.provider.getTransactionReceipt(body.txHash as string);
    expect(receipt!.gasUsed, "the table bounds this relay").to.be.at.most(BigInt(floor.relayGas));
    expect(gasCostInUsdc(receipt!.gasUsed, receipt!.gasPrice, parseUsdc(USDC_PER_ETH)), "what the relay cost in USDC").to.be.at.most(fee);
  });

  it("answers a retry of that withdrawal from its lease even when the floor has risen above its take since", async function () {
    const pricier = await startRelayer(buildRelayerConfig(chain, indexer, { pricingMode: "paid", usdcPerEth: "1000000", dbPath }));
    try {
      const { body: first } = await paid.post("/api/withdraw", {
        ...serviceDeposit(notes.floor),
        recipient,
        amountAtomic: (await paid.relayer.store.getLease(nullifierHashOf(notes.floor.nullifier)))!.gross.toString(),
      });
      expect(first.replayed).to.equal(true);
      const { status, body } = await pricier.post("/api/withdraw", {
        ...serviceDeposit(notes.floor),
        recipient,
        amountAtomic: first.amount as string,
      });
      expect(status, JSON.stringify(body)).to.equal(200);
      expect(body).to.deep.include({ replayed: true, txHash: first.txHash });
      expect(BigInt((await floorNow(pricier)).floorAtomic), "the floor now exceeds the take").to.be.greaterThan(BigInt(body.fee as string));
    } finally {
      await pricier.stop();
    }
  });

  it("holds settle, x402-pay, settle-x402 and verify to the same floor above the minimum settle", async function () {
    const floor = await floorNow(paid);
    const amount = "100000";
    expect(BigInt(amount)).to.be.below(BigInt(floor.smallestWithdrawalAtomic));
    const settle = await paid.post("/api/facilitator/settle", {
      paymentDetails: { scheme: "exact", payTo: provider, maxAmountRequired: amount, networkId: "eip155:31337" },
      serviceDeposit: serviceDeposit(notes.routes),
    });
    const x402Pay = await paid.post("/api/x402-pay", { ...serviceDeposit(notes.routes), provider, amountAtomic: amount });
    const settleX402 = await paid.post("/api/facilitator/settle-x402", {
      accepts: {
        scheme: "exact",
        network: "eip155:31337",
        asset: chain.facilitator.addressBook.usdc,
        payTo: provider,
        amount,
        extra: { name: "USDC", version: "2" },
      },
      serviceDeposit: serviceDeposit(notes.routes),
      acceptNotPrivate: true,
    });
    for (const [route, answer] of Object.entries({ settle, x402Pay, settleX402 })) {
      expect(answer.status, `${route}: ${JSON.stringify(answer.body)}`).to.equal(400);
      expect(answer.body, route).to.deep.include({ settled: false, code: "BELOW_FEE_FLOOR" });
      expect(answer.body.error, route).to.contain(`Withdraw at least ${floor.smallestWithdrawalAtomic} atomic`);
    }
    const verify = await paid.post("/api/facilitator/verify", {
      paymentDetails: { scheme: "exact", payTo: provider, maxAmountRequired: amount, networkId: "eip155:31337" },
      serviceDeposit: serviceDeposit(notes.routes),
    });
    expect(verify.body).to.deep.include({ valid: false, reason: "below_fee_floor" });
    await expectUntouched(paid, notes.routes);
  });

  it("in free-for-testing mode charges no floor but still holds /api/withdraw to the minimum settle", async function () {
    const free = await startRelayer(buildRelayerConfig(chain, indexer, { usdcPerEth: USDC_PER_ETH }));
    try {
      expect((await floorNow(free)).enforced).to.equal(false);
      expect((await floorNow(free)).smallestWithdrawalAtomic).to.equal("40000");
      const { status, body } = await free.post("/api/withdraw", { ...serviceDeposit(notes.routes), recipient, amountAtomic: "1" });
      expect(status, JSON.stringify(body)).to.equal(400);
      expect(body).to.deep.include({ settled: false, code: "BELOW_MINIMUM_SETTLE" });
      expect(body.error).to.contain("minimum settle of 40000 atomic").and.contain("paid by the operator").and.contain("Withdraw at least 40000 atomic");
      await expectUntouched(free, notes.routes);
    } finally {
      await free.stop();
    }
  });
});
