import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentRequirements } from "@x402/core/types";
import { BATCH_SETTLEMENT_ADDRESS, toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme,
  buildChannelConfig,
  computeChannelId,
  InMemoryClientChannelStorage,
  processPaymentResponse,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { expect } from "chai";
import { AbiCoder, hexlify, keccak256, randomBytes, Wallet } from "ethers";
import { privateKeyToAccount } from "viem/accounts";
import { payerWallet } from "../../relayer/x402/payer-keys.js";
import { createLeanIMT, nullifierHashOf } from "../../sdk/index.js";
import { caip2NetworkOf } from "../../sdk/x402/networks.js";
import { placeBatchSettlementPeer } from "../../x402-peers/batch-settlement.js";
import { startBatchSettlementSeller } from "../../x402-peers/batch-settlement-seller.js";
import { startReferenceFacilitator } from "../../x402-peers/reference-facilitator.js";
import { WEATHER_REPORT } from "../../x402-peers/seller.js";
import { depositNote, secretsFor } from "../contracts/helpers/notes.js";
import { proveRelayedWithdrawal } from "../contracts/helpers/withdrawals.js";
import { startLocalChain } from "../indexer/helpers/local-chain.js";

const PRICE = 1_000n;
const DEPOSIT = 100_000n;
const NOTE_VALUE = 1_000_000n;
const REQUESTS = 20;

const chain = await startLocalChain();
const { usdc, entrypoint, privacyPool, scope, accounts } = chain.facilitator;
const { ethers, networkHelpers } = chain.connection;
const chainId = Number((await ethers.provider.getNetwork()).chainId);
const network = caip2NetworkOf(chainId);
const asset = (await usdc.getAddress()) as `0x${string}`;
const { settlement } = await placeBatchSettlementPeer(ethers);

const facilitatorKey = Wallet.createRandom();
await networkHelpers.setBalance(facilitatorKey.address, 10n ** 18n);
const facilitator = await startReferenceFacilitator({
  rpcUrl: chain.rpc.url,
  chainId,
  privateKey: facilitatorKey.privateKey as `0x${string}`,
  batchSettlement: true,
});
const payTo = Wallet.createRandom().address as `0x${string}`;
const seller = await startBatchSettlementSeller({
  facilitatorUrl: facilitator.url,
  network,
  payTo,
  asset,
  amountAtomic: PRICE.toString(),
  receiverAuthorizerKey: Wallet.createRandom().privateKey as `0x${string}`,
  storageDirectory: mkdtempSync(path.join(tmpdir(), "batch-seller-")),
});

/** The seller's batch-settlement entry, from its unpaid 402. */
async function sellerRequirements(): Promise<{ accepted: PaymentRequirements; resource: unknown }> {
  const response = await fetch(seller.resourceUrl);
  expect(response.status).to.equal(402);
  const required = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED") ?? "");
  const accepted = required.accepts.find((entry) => entry.scheme === "batch-settlement");
  if (accepted === undefined) throw new Error("the seller offers no batch-settlement entry");
  return { accepted, resource: required.resource };
}

/**
 * A private agent's tab: its note pays the tab's deposit by one relayed proof to a single-use payer (the relayer's
 * payer of that nullifier hash, docs/design.md 6), whose one EIP-3009 authorization, fixed before the proof, funds
 * the channel; the vouchers are signed by a key made for the tab.
 */
async function openTab() {
  const note = await depositNote(chain.facilitator, accounts.depositor, NOTE_VALUE, secretsFor(41n));
  const aspTree = createLeanIMT([note.label]);
  await (await entrypoint.updateRoot(aspTree.root, aspTree.depth, "bafy-private-tab")).wait();
  const payer = payerWallet(hexlify(randomBytes(32)), nullifierHashOf(note.nullifier));
  const tabKey = Wallet.createRandom();
  const payerSigner = toClientEvmSigner({
    address: payer.address as `0x${string}`,
    signTypedData: () => Promise.reject(new Error("the single-use payer signs only the deposit, which the relayer signs")),
  });
  const voucherSigner = toClientEvmSigner(privateKeyToAccount(tabKey.privateKey as `0x${string}`));
  const salt = hexlify(randomBytes(32)) as `0x${string}`;
  const storage = new InMemoryClientChannelStorage();
  const deps = { signer: payerSigner, voucherSigner, storage, salt };

  const { accepted, resource } = await sellerRequirements();
  const channelConfig = buildChannelConfig(deps, accepted);
  const channelId = computeChannelId(channelConfig, network);
  const depositSalt = hexlify(randomBytes(32));
  const depositNonce = keccak256(AbiCoder.defaultAbiCoder().encode(["bytes32", "uint256"], [channelId, BigInt(depositSalt)]));
  const validBefore = BigInt(Math.floor(Date.now() / 1000) + 600);

  const poolBefore = await usdc.balanceOf(privacyPool);
  const relayed = await proveRelayedWithdrawal({
    note,
    withdrawnValue: DEPOSIT,
    stateTree: createLeanIMT([note.commitment]),
    aspTree,
    entrypoint: await entrypoint.getAddress(),
    scope,
    relayData: { recipient: payer.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n, payment: { nonce: depositNonce, validBefore } },
  });
  await (await entrypoint.relay(relayed.withdrawal, relayed.proof, scope, relayed.stateTreeSize)).wait();
  expect(await usdc.balanceOf(payer.address)).to.equal(DEPOSIT);
  expect(poolBefore - (await usdc.balanceOf(privacyPool))).to.equal(DEPOSIT);

  // The relayer's part: the payer's authorization of exactly the payout to the deposit collector, for this channel.
  const { name, version } = accepted.extra as { name: string; version: string };
  const authorization = await payer.signTypedData(
    { name, version, chainId, verifyingContract: asset },
    {
      ReceiveWithAuthorization: [
        { name: "from", type: "address" },
        { name: "to", type: "address" },
        { name: "value", type: "uint256" },
        { name: "validAfter", type: "uint256" },
        { name: "validBefore", type: "uint256" },
        { name: "nonce", type: "bytes32" },
      ],
    },
    { from: payer.address, to: "0x4020806089470a89826cB9fB1f4059150b550004", value: DEPOSIT, validAfter: 0n, validBefore, nonce: depositNonce },
  );
  const depositPayment = {
    x402Version: 2,
    resource,
    accepted,
    payload: {
      type: "deposit",
      channelConfig,
      voucher: await signVoucher(voucherSigner, channelId, PRICE.toString(), network),
      deposit: {
        amount: DEPOSIT.toString(),
        authorization: { erc3009Authorization: { validAfter: "0", validBefore: validBefore.toString(), salt: depositSalt, signature: authorization } },
      },
    },
  };
  const first = await fetch(seller.resourceUrl, { headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(depositPayment as never) } });
  expect(first.status, await first.clone().text()).to.equal(200);
  await processPaymentResponse(storage, (header) => first.headers.get(header), { channelId, requestAmount: PRICE.toString(), depositAmount: DEPOSIT.toString() });

  const client = x402Client.fromConfig({
    schemes: [{ network: network as `${string}:${string}`, client: new BatchSettlementEvmScheme(payerSigner, { voucherSigner, storage, salt }) }],
    spendControls: { allowedAssets: [{ network: network as `${string}:${string}`, asset, maxAmountPerPayment: PRICE.toString() }] },
  });
  return { payer, channelConfig, channelId, fetchPaid: wrapFetchWithPayment(fetch, client) };
}

describe("a private tab on x402's batch-settlement, with @x402/evm's seller and facilitator unchanged", function () {
  after(async function () {
    await seller.close();
    await facilitator.close();
    await chain.close();
  });

  it("pays many requests out of one proof, each a voucher and no transaction; the seller is paid what it served, the rest goes back to the payer", async function () {
    const tab = await openTab();
    expect(await settlement.channels(tab.channelId)).to.deep.equal([DEPOSIT, 0n]);
    expect(await usdc.balanceOf(BATCH_SETTLEMENT_ADDRESS)).to.equal(DEPOSIT);

    const blockBefore = await ethers.provider.getBlockNumber();
    for (let i = 1; i < REQUESTS; i++) {
      const response = await tab.fetchPaid(seller.resourceUrl);
      expect(response.status).to.equal(200);
      expect(await response.json()).to.deep.equal(WEATHER_REPORT);
    }
    expect(await ethers.provider.getBlockNumber()).to.equal(blockBefore);
    expect(seller.served()).to.equal(REQUESTS);

    await seller.channels.claimAndSettle();
    expect(await usdc.balanceOf(payTo)).to.equal(BigInt(REQUESTS) * PRICE);
    await seller.channels.refund([tab.channelId]);
    expect(await usdc.balanceOf(tab.payer.address)).to.equal(DEPOSIT - BigInt(REQUESTS) * PRICE);
    expect(await usdc.balanceOf(BATCH_SETTLEMENT_ADDRESS)).to.equal(0n);
  });
});
