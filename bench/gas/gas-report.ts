// npm run bench:gas
//
// Gas of the facilitator's contract operations on the embedded chain, with real Groth16 proofs: deposit and
// relayed withdrawal with 1, 1k and 100k leaves already in the state tree (filled as bench/simulated-state-tree.ts
// explains), a seller paid straight from the pool against the detour (the relay that makes the pool the seller's
// payer, then the seller's facilitator's transferWithAuthorization from the pool) from the same tree position, the
// return of an unused authorization, a private tab opened by the pool from the same tree position, an ASP root update (plain and revoking), an access-fee payment, the verifier alone and relayBatch of 1, 4 and 16 withdrawals at 1k leaves, and
// a private tab's open, claim, settle, refund and return (tab-gas.ts). Prints a table, where the deposit's and the relay's gas
// goes (gas-breakdown.ts), compares both with the figures before the gas work and with Privacy Pools', and writes bench/results/gas.json.
import type { ContractTransactionResponse } from "ethers";
import { network } from "hardhat";
import { hexlify, randomBytes, toBeHex, Wallet } from "ethers";
import { createLeanIMT, createNote, labelOf, namePublicSignals, nullifierHashOf, precommitmentOf, releaseProverThreads } from "../../sdk/index.js";
import { deployedFacilitator } from "../../test/contracts/helpers/fixtures.js";
import { fundDepositor, secretsFor } from "../../test/contracts/helpers/notes.js";
import { poolAuthorizationSignature } from "../../sdk/x402/index.js";
import { provePoolAuthorization, proveRelayedWithdrawal, proveSellerPayment, proveTabOpening } from "../../test/contracts/helpers/withdrawals.js";
import { placeBatchSettlementPeer } from "../../x402-peers/batch-settlement.js";
import { printTable, writeResults } from "../report.js";
import { facilitatorClassifier } from "./facilitator-parts.js";
import { type Breakdown, gasBreakdown, PART_NAMES, PARTS } from "./gas-breakdown.js";
import { accruedFeesOnce, fillStateTree } from "../simulated-state-tree.js";
import { measureTabGas, TAB_REQUESTS } from "./tab-gas.js";

const TREE_SIZES = [1, 1_000, 100_000];
/** Withdrawals per Entrypoint.relayBatch measured, at the headline tree size. */
const BATCH_SIZES = [1, 4, 16];
const DEPOSIT = 5_000_000n;
const WITHDRAWAL = 1_000_000n;
const RELAY_FEE_BPS = 500n;
/** The Privacy Pools relayer's own estimate of gas per relayed withdrawal. */
const PRIVACY_POOLS_RELAY_ESTIMATE = { min: 450_000, max: 650_000 };
/** Privacy Pools' own contracts on the same kind of Hardhat chain, ~1k leaves: an ERC20 deposit, a relayed partial withdrawal. */
const PRIVACY_POOLS_AT_1K = { treeSize: 1_000, deposit: 400_000, relay: 560_000 };
/** This bench at commit 94b91ef, before the gas work (three transfers per relay, poseidon-solidity, LeanIMT). */
const BEFORE: Record<number, { deposit: number; relay: number }> = {
  1: { deposit: 296_193, relay: 491_377 },
  1_000: { deposit: 441_132, relay: 675_200 },
  100_000: { deposit: 477_266, relay: 711_358 },
};

interface Measurement {
  treeSize: number;
  deposit: number;
  relay: number;
  depositBreakdown: Breakdown;
  relayBreakdown: Breakdown;
  /** A seller's price paid by the pool in the relay (SellerPayment): one transaction. */
  sellerPayment: number;
  /**
   * The same price by the detour: the x402 relay that makes the pool the seller's payer (PoolAuthorization) plus the
   * seller's facilitator's transferWithAuthorization from the pool (ERC-1271); and the return of such an authorization
   * nobody used (Entrypoint.refundAuthorization).
   */
  detour: { relay: number; transferWithAuthorization: number; unusedReturn: number };
  /** A private tab opened by the pool: the relay that spends the note and deposits into the channel (TabOpening), one transaction. */
  tabOpening: number;
  aspRootUpdate: number;
  revokingAspRootUpdate: number;
  accessFee: number;
  verifier: number;
}

async function mined(sent: Promise<ContractTransactionResponse>) {
  const receipt = await (await sent).wait();
  if (!receipt) throw new Error("transaction was not mined");
  return receipt;
}

async function gasOf(sent: Promise<ContractTransactionResponse>): Promise<number> {
  return Number((await mined(sent)).gasUsed);
}

/** On a fresh chain whose state tree holds `treeSize` leaves: deposits, publishes an ASP root, relays a withdrawal. */
async function measure(treeSize: number): Promise<Measurement> {
  const connection = await network.create();
  const facilitator = await deployedFacilitator(connection);
  const { entrypoint, privacyPool, usdc, verifier, scope, accounts } = facilitator;
  const fillerLeaves = Array.from({ length: treeSize }, (_, i) => BigInt(i + 1));
  const stateTree = await fillStateTree(connection, privacyPool, fillerLeaves);

  // In steady operation the pool, the depositor and the fee recipient (a treasury) already hold USDC, so their
  // balance slots are non-zero, and the treasury has fees accrued in the pool; the recipient is a fresh
  // address.
  for (const holder of [privacyPool, accounts.depositor, accounts.feeRecipient]) await usdc.mint(holder, 1n);
  await accruedFeesOnce(connection, privacyPool, accounts.feeRecipient.address);
  await fundDepositor(facilitator, accounts.depositor, DEPOSIT);
  const secrets = secretsFor(BigInt(treeSize));
  const note = createNote(DEPOSIT, labelOf(scope, BigInt(treeSize + 1)), secrets);
  const depositReceipt = await mined(
    entrypoint.connect(accounts.depositor).deposit(usdc, DEPOSIT, precommitmentOf(secrets)),
  );
  const deposit = Number(depositReceipt.gasUsed);
  stateTree.insert(note.commitment);
  if ((await privacyPool.currentRoot()) !== stateTree.root) {
    throw new Error(`the simulated tree of ${treeSize} leaves diverged from the TypeScript LeanIMT`);
  }

  // Earlier roots first, so the counters the measured update writes are non-zero as in steady state; the revoking
  // update keeps one of them.
  for (let root = 1n; root <= (await entrypoint.ROOT_HISTORY_SIZE()); root++) {
    await entrypoint.updateRoot(root, 0n, "bench-earlier-root");
  }
  const revokingAspRootUpdate = await gasOf(entrypoint.revokeAndUpdateRoot(12_345n, 0n, "bench-revoking-root", [1n]));
  const aspTree = createLeanIMT([note.label]);
  const aspRootUpdate = await gasOf(entrypoint.updateRoot(aspTree.root, aspTree.depth, "bench-asp-root"));

  // A relayed withdrawal to a fresh recipient.
  const now = (await connection.ethers.provider.getBlock("latest"))!.timestamp;
  const validBefore = BigInt(now + 300);
  const { withdrawal, proof, stateTreeSize } = await proveRelayedWithdrawal({
    note,
    withdrawnValue: WITHDRAWAL,
    stateTree,
    aspTree,
    relayData: {
      recipient: accounts.recipient.address,
      feeRecipient: accounts.feeRecipient.address,
      relayFeeBPS: RELAY_FEE_BPS,
    },
    entrypoint: await entrypoint.getAddress(),
    scope,
  });
  const verifierGas = Number(await verifier.verifyProof.estimateGas(proof.pA, proof.pB, proof.pC, proof.pubSignals));
  const beforeRelay = await connection.networkHelpers.takeSnapshot();
  const relayReceipt = await mined(entrypoint.connect(accounts.stranger).relay(withdrawal, proof, scope, stateTreeSize));
  const relay = Number(relayReceipt.gasUsed);
  const classifier = await facilitatorClassifier(facilitator, [aspTree.root]);
  const depositBreakdown = await gasBreakdown(connection, depositReceipt.hash, classifier);
  const relayBreakdown = await gasBreakdown(connection, relayReceipt.hash, classifier);

  await entrypoint.setAccessFeeTreasury(accounts.feeRecipient);
  await fundDepositor(facilitator, accounts.depositor, 5_000n);
  const accessFee = await gasOf(entrypoint.connect(accounts.depositor).payAccessFee(usdc, 42n, 5_000n));

  // The seller's price (the relay's payout) paid both ways from the state before the relay, so both insert the change
  // note at the same position (a leaf's insert hashes one node per set bit of its index). The seller already holds
  // USDC, as a live one does; the detour's payer is the relay's recipient.
  const seller = Wallet.createRandom().address;
  const price = WITHDRAWAL - (WITHDRAWAL * RELAY_FEE_BPS) / 10_000n;
  await beforeRelay.restore();
  await usdc.mint(seller, 1n);
  const transfer = { payTo: seller, value: price, validAfter: BigInt(now - 600), validBefore: validBefore };
  const authorized = await provePoolAuthorization({
    note,
    withdrawnValue: WITHDRAWAL,
    stateTree,
    aspTree,
    authorization: { ...transfer, nonce: toBeHex(nullifierHashOf(note.nullifier), 32), feeRecipient: accounts.feeRecipient.address, relayFeeBPS: RELAY_FEE_BPS },
    entrypoint: await entrypoint.getAddress(),
    scope,
  });
  const detourRelay = await gasOf(entrypoint.connect(accounts.stranger).relay(authorized.withdrawal, authorized.proof, scope, authorized.stateTreeSize));
  const afterDetourRelay = await connection.networkHelpers.takeSnapshot();
  const authorizationRefundAnchor = namePublicSignals(authorized.proof.pubSignals).refundAnchor;
  const transferWithAuthorization = await gasOf(
    usdc.connect(accounts.stranger)["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
      privacyPool, seller, price, transfer.validAfter, transfer.validBefore, toBeHex(nullifierHashOf(note.nullifier), 32),
      poolAuthorizationSignature(nullifierHashOf(note.nullifier), authorizationRefundAnchor),
    ),
  );
  await afterDetourRelay.restore();
  await connection.ethers.provider.send("evm_increaseTime", [301]);
  const unusedReturn = await gasOf(entrypoint.connect(accounts.stranger).refundAuthorization(usdc, nullifierHashOf(note.nullifier), transfer, authorizationRefundAnchor));
  await beforeRelay.restore();
  await usdc.mint(seller, 1n);
  const paid = await proveSellerPayment({
    note,
    stateTree,
    aspTree,
    sellerPayment: {
      payTo: seller,
      amount: price,
      feeRecipient: accounts.feeRecipient.address,
      fee: WITHDRAWAL - price,
      requestReference: hexlify(randomBytes(32)),
      validBefore: validBefore,
    },
    entrypoint: await entrypoint.getAddress(),
    scope,
  });
  const sellerPayment = await gasOf(entrypoint.connect(accounts.stranger).relay(paid.withdrawal, paid.proof, scope, paid.stateTreeSize));

  // A tab of the same price opened from the same state; x402's contract already holds other channels' USDC.
  await beforeRelay.restore();
  const { settlement } = await placeBatchSettlementPeer(connection.ethers);
  await usdc.mint(settlement, 1n);
  const opening = await proveTabOpening({
    note,
    withdrawnValue: WITHDRAWAL,
    stateTree,
    aspTree,
    opening: {
      channel: {
        payer: await entrypoint.tabPayerOf(nullifierHashOf(note.nullifier)),
        payerAuthorizer: Wallet.createRandom().address,
        receiver: seller,
        receiverAuthorizer: Wallet.createRandom().address,
        token: await usdc.getAddress(),
        withdrawDelay: 900,
        salt: hexlify(randomBytes(32)),
      },
      reclaimableAfter: BigInt(now + 86_400),
      feeRecipient: accounts.feeRecipient.address,
      relayFeeBPS: RELAY_FEE_BPS,
    },
    entrypoint: await entrypoint.getAddress(),
    scope,
  });
  const tabOpening = await gasOf(entrypoint.connect(accounts.stranger).relay(opening.withdrawal, opening.proof, scope, opening.stateTreeSize));
  await connection.close();
  return {
    treeSize, deposit, relay, depositBreakdown, relayBreakdown, sellerPayment, detour: { relay: detourRelay, transferWithAuthorization, unusedReturn }, tabOpening,
    aspRootUpdate, revokingAspRootUpdate, accessFee, verifier: verifierGas,
  };
}

/**
 * Entrypoint.relayBatch of k withdrawals with `treeSize` leaves in the tree, for each k in BATCH_SIZES: every
 * batch from the same state (a snapshot), each withdrawal to a fresh recipient, fees to one treasury.
 */
async function measureBatches(treeSize: number): Promise<{ k: number; gas: number; perWithdrawal: number }[]> {
  const connection = await network.create();
  const facilitator = await deployedFacilitator(connection);
  const { entrypoint, privacyPool, usdc, scope, accounts } = facilitator;
  const stateTree = await fillStateTree(connection, privacyPool, Array.from({ length: treeSize }, (_, i) => BigInt(i + 1)));
  for (const holder of [privacyPool, accounts.depositor, accounts.feeRecipient]) await usdc.mint(holder, 1n);
  await accruedFeesOnce(connection, privacyPool, accounts.feeRecipient.address);
  const largest = Math.max(...BATCH_SIZES);
  const notes = [];
  for (let i = 0; i < largest; i++) {
    const secrets = secretsFor(BigInt(treeSize + i));
    await fundDepositor(facilitator, accounts.depositor, DEPOSIT);
    await mined(entrypoint.connect(accounts.depositor).deposit(usdc, DEPOSIT, precommitmentOf(secrets)));
    const note = createNote(DEPOSIT, labelOf(scope, BigInt(treeSize + i + 1)), secrets);
    stateTree.insert(note.commitment);
    notes.push(note);
  }
  const aspTree = createLeanIMT(notes.map((note) => note.label));
  await mined(entrypoint.updateRoot(aspTree.root, aspTree.depth, "bench-batch"));
  const withdrawals = [];
  for (const note of notes) {
    withdrawals.push(
      await proveRelayedWithdrawal({
        note,
        withdrawnValue: WITHDRAWAL,
        stateTree,
        aspTree,
        relayData: {
          recipient: Wallet.createRandom().address,
          feeRecipient: accounts.feeRecipient.address,
          relayFeeBPS: RELAY_FEE_BPS,
        },
        entrypoint: await entrypoint.getAddress(),
        scope,
      }),
    );
  }
  const proven = await connection.networkHelpers.takeSnapshot();
  const batches = [];
  for (const k of BATCH_SIZES) {
    const batch = withdrawals.slice(0, k);
    const gas = await gasOf(
      entrypoint.connect(accounts.stranger).relayBatch(batch.map((w) => w.withdrawal), batch.map((w) => w.proof), scope, batch.map((w) => w.stateTreeSize)),
    );
    batches.push({ k, gas, perWithdrawal: Math.round(gas / k) });
    await proven.restore();
  }
  await connection.close();
  return batches;
}

const fmt = (n: number) => n.toLocaleString("en-US");
const leaves = (n: number) => (n === 1 ? "1 leaf" : `${fmt(n)} leaves`);

function compareWithEstimate(gas: number): string {
  const { min, max } = PRIVACY_POOLS_RELAY_ESTIMATE;
  if (gas < min) return `${(((min - gas) / min) * 100).toFixed(0)}% below its low end`;
  if (gas > max) return `${(((gas - max) / max) * 100).toFixed(0)}% above its high end`;
  return "within it";
}

const detourGas = (m: Measurement) => m.detour.relay + m.detour.transferWithAuthorization;

const measurements: Measurement[] = [];
for (const treeSize of TREE_SIZES) {
  console.log(`measuring with ${leaves(treeSize)} in the state tree...`);
  measurements.push(await measure(treeSize));
}
console.log(`measuring relayBatch of ${BATCH_SIZES.join(", ")} withdrawals with ${leaves(PRIVACY_POOLS_AT_1K.treeSize)} in the state tree...`);
const batches = await measureBatches(PRIVACY_POOLS_AT_1K.treeSize);
console.log("measuring a private tab...");
const tab = await measureTabGas();
await releaseProverThreads();

const largest = measurements[measurements.length - 1]!;
const rows: [string, number][] = [
  ...measurements.map((m): [string, number] => [`deposit, ${leaves(m.treeSize)} in the tree`, m.deposit]),
  ...measurements.map((m): [string, number] => [`relayed withdrawal, ${leaves(m.treeSize)} in the tree`, m.relay]),
  ...measurements.map((m): [string, number] => [`seller paid straight from the pool, ${leaves(m.treeSize)} in the tree`, m.sellerPayment]),
  ...measurements.map((m): [string, number] => [
    `seller paid by the detour (relay + transferWithAuthorization), ${leaves(m.treeSize)}`,
    detourGas(m),
  ]),
  ["an unused detour payment back as the agent's note (refundAuthorization)", largest.detour.unusedReturn],
  ...measurements.map((m): [string, number] => [`private tab opened by the pool (one relay), ${leaves(m.treeSize)}`, m.tabOpening]),
  ["ASP root update", largest.aspRootUpdate],
  ["ASP root update, revoking and keeping one root", largest.revokingAspRootUpdate],
  ["access-fee payment", largest.accessFee],
  ["verifier alone (eth_estimateGas, incl. 21k base)", largest.verifier],
  ...batches.map(({ k, perWithdrawal }): [string, number] => [
    `relayBatch of ${k}, per withdrawal, ${leaves(PRIVACY_POOLS_AT_1K.treeSize)} in the tree`,
    perWithdrawal,
  ]),
  ["private tab: open, one relay (tab notes only in the tree)", tab.open],
  [`private tab: claim of ${TAB_REQUESTS} requests' voucher`, tab.claim],
  ["private tab: settle to the seller", tab.settle],
  ["private tab: last claim + refund of the rest (one multicall)", tab.claimAndRefund],
  ["private tab: the rest back into the pool (returnTab, its payer cloned)", tab.restRefund],
  ["private tab never claimed: timed withdrawal (withdrawTab twice)", tab.timedWithdrawal],
  ["private tab never claimed: its deposit back into the pool (returnTab)", tab.tabRefund],
  [`private tab: per request over ${TAB_REQUESTS}, open to the rest back in the pool`, tab.perRequest],
];
printTable(["operation", "      gas"], rows.map(([name, gas]) => [name, fmt(gas).padStart(9)]));

for (const [operation, pick] of [
  ["deposit", (m: Measurement) => m.depositBreakdown],
  ["relayed withdrawal", (m: Measurement) => m.relayBreakdown],
] as const) {
  console.log(`\n${operation}, where the gas goes:`);
  const header = measurements.map((m) => leaves(m.treeSize).padStart(12)).join("");
  const width = Math.max(...PARTS.map((part) => PART_NAMES[part].length));
  console.log(`${"".padEnd(width)}${header}`);
  for (const part of PARTS) {
    console.log(`${PART_NAMES[part].padEnd(width)}${measurements.map((m) => fmt(pick(m)[part]).padStart(12)).join("")}`);
  }
}

const change = (now: number, then: number) => `${(((now - then) / then) * 100).toFixed(1)}%`;
console.log("\nagainst the figures before the gas work (94b91ef) and Privacy Pools' own contracts at ~1k leaves:");
for (const operation of ["deposit", "relay"] as const) {
  for (const m of measurements) {
    const before = BEFORE[m.treeSize]!;
    const pp = m.treeSize === PRIVACY_POOLS_AT_1K.treeSize
      ? `; Privacy Pools ${fmt(PRIVACY_POOLS_AT_1K[operation])} (${change(m[operation], PRIVACY_POOLS_AT_1K[operation])})`
      : "";
    console.log(`  ${operation}, ${leaves(m.treeSize)}: ${fmt(m[operation])}, before ${fmt(before[operation])} (${change(m[operation], before[operation])})${pp}`);
  }
}

console.log("\na seller paid straight from the pool against the detour, from the same tree position:");
for (const m of measurements) {
  console.log(
    `  ${leaves(m.treeSize)}: ${fmt(m.sellerPayment)} in 1 transaction against ${fmt(m.detour.relay)} + ${fmt(m.detour.transferWithAuthorization)} = ` +
      `${fmt(detourGas(m))} in 2 (${change(m.sellerPayment, detourGas(m))})`,
  );
}

const { min, max } = PRIVACY_POOLS_RELAY_ESTIMATE;
console.log(`\nPrivacy Pools relayer estimate per relayed withdrawal: ${fmt(min)}-${fmt(max)} gas`);
for (const m of measurements) {
  console.log(`  ours with ${leaves(m.treeSize)}: ${fmt(m.relay)} gas, ${compareWithEstimate(m.relay)}`);
}

const bySize = <T>(pick: (m: Measurement) => T) =>
  Object.fromEntries(measurements.map((m) => [m.treeSize, pick(m)]));
const atOneK = measurements.find((m) => m.treeSize === PRIVACY_POOLS_AT_1K.treeSize)!;
await writeResults("gas", {
  // The headline figures are at 1k leaves, the size of a live pool; every size is below.
  headlineTreeSize: atOneK.treeSize,
  relay: atOneK.relay,
  deposit: atOneK.deposit,
  // relayBatch of the largest measured batch, per withdrawal.
  relayBatchPerWithdrawal: batches[batches.length - 1]!.perWithdrawal,
  relayBatches: batches,
  relayByTreeSize: bySize((m) => m.relay),
  sellerPaymentByTreeSize: bySize((m) => m.sellerPayment),
  detourByTreeSize: bySize((m) => m.detour),
  tabOpeningByTreeSize: bySize((m) => m.tabOpening),
  depositByTreeSize: bySize((m) => m.deposit),
  relayBreakdownByTreeSize: bySize((m) => m.relayBreakdown),
  depositBreakdownByTreeSize: bySize((m) => m.depositBreakdown),
  aspRootUpdate: largest.aspRootUpdate,
  revokingAspRootUpdate: largest.revokingAspRootUpdate,
  accessFee: largest.accessFee,
  verifier: largest.verifier,
  privateTab: tab,
  privacyPoolsRelayEstimate: PRIVACY_POOLS_RELAY_ESTIMATE,
  privacyPoolsAt1k: PRIVACY_POOLS_AT_1K,
  before: BEFORE,
});
