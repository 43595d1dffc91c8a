import path from "node:path";
import { readFile } from "node:fs/promises";
import { expect } from "chai";
import { JsonRpcProvider, Wallet, parseEther } from "ethers";
import { waitFor } from "../../../scripts/demo/processes.js";
import { DEV_ROLES, devAccount } from "../../../scripts/stack/dev-accounts.js";
import type { StackInfo } from "../../../scripts/stack/stack.js";
import { depositNote, NoteVault, X402Agent, type X402AgentOptions } from "../../../sdk/agent/index.js";
import { FacilitatorClient } from "../../../sdk/client/facilitator-client.js";
import { TestUSDC__factory } from "../../../types/ethers-contracts/index.js";
import { caip2NetworkOf } from "../../../sdk/x402/networks.js";
import { startReferenceFacilitator } from "../../../x402-peers/reference-facilitator.js";
import { startSeller, WEATHER_REPORT } from "../../../x402-peers/seller.js";

const PRICE = 50_000n;
const DEPOSIT = 1_000_000n;

/**
 * One payment through a running stack, as an agent author makes it: the deployer (a development account, owner of
 * the TestUSDC code) funds a fresh agent wallet, the agent deposits a note, and pays an x402 seller settled by the
 * reference facilitator. Checks the seller delivered and was paid.
 */
export async function payASellerThrough(info: StackInfo, logDir: string): Promise<void> {
  const provider = new JsonRpcProvider(info.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
  const facilitator = await startReferenceFacilitator({
    rpcUrl: info.rpcUrl,
    chainId: info.chainId,
    privateKey: devAccount(DEV_ROLES.sellerFacilitator).privateKey as `0x${string}`,
  });
  const payTo = Wallet.createRandom().address;
  const seller = await startSeller({
    facilitatorUrl: facilitator.url,
    x402Version: 2,
    network: caip2NetworkOf(info.chainId),
    payTo,
    asset: info.contracts.usdc,
    amountAtomic: PRICE.toString(),
  });
  try {
    const { agent } = await stackAgent(info, provider, DEPOSIT, path.join(logDir, "test-notes.vault"));
    const response = await agent.fetch(seller.resourceUrl);
    expect(response.status).to.equal(200);
    expect(await response.json()).to.deep.equal(WEATHER_REPORT);
    expect(await TestUSDC__factory.connect(info.contracts.usdc, provider).balanceOf(payTo)).to.equal(PRICE);
  } finally {
    await seller.close();
    await facilitator.close();
    provider.destroy();
  }
}

/**
 * An agent as its author makes one on a running stack: a fresh wallet, funded by the deployer (a development account,
 * owner of the TestUSDC code), deposits `value` into the pool; once the stack's ASP approved the deposit, an X402Agent
 * with a vault at `vaultFile` pays out of that note through the stack's relayer. `options` adds to its options.
 */
export async function stackAgent(info: StackInfo, provider: JsonRpcProvider, value: bigint, vaultFile: string, options: Partial<X402AgentOptions> = {}) {
  const deployer = new Wallet(devAccount(DEV_ROLES.deployer).privateKey, provider);
  const wallet = new Wallet(Wallet.createRandom().privateKey, provider);
  await (await deployer.sendTransaction({ to: wallet.address, value: parseEther("1") })).wait();
  await (await TestUSDC__factory.connect(info.contracts.usdc, deployer).mint(wallet.address, value)).wait();
  const book = JSON.parse(await readFile(info.addressBookFile, "utf8"));
  const { note } = await depositNote({ signer: wallet, addressBook: book, value, seed: Wallet.createRandom().privateKey });
  await waitFor("the ASP approval", async () =>
    (await fetch(`${info.indexerUrl}/v1/asp/proofs/${note.label}`, { headers: { authorization: `Bearer ${info.indexerToken}` } })).ok,
  );
  const notes = await NoteVault.create(vaultFile, "test-passphrase-0123456789");
  await notes.save(note);
  const agent = new X402Agent({
    facilitator: new FacilitatorClient(info.relayerUrl),
    notes,
    network: { chainId: info.chainId, asset: info.contracts.usdc },
    acceptNotPrivate: true,
    ...options,
  });
  return { agent, notes, address: wallet.address };
}
