import path from "node:path";
import { readFile } from "node:fs/promises";
import { expect } from "chai";
import { JsonRpcProvider, Wallet, parseEther } from "ethers";
import { waitFor } from "../../../scripts/demo/processes.js";
import { DEV_ROLES, devAccount } from "../../../scripts/stack/dev-accounts.js";
import type { StackInfo } from "../../../scripts/stack/stack.js";
import { depositNote, NoteVault, X402Agent } from "../../../sdk/agent/index.js";
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
    const deployer = new Wallet(devAccount(DEV_ROLES.deployer).privateKey, provider);
    const agentWallet = new Wallet(Wallet.createRandom().privateKey, provider);
    await (await deployer.sendTransaction({ to: agentWallet.address, value: parseEther("1") })).wait();
    const token = TestUSDC__factory.connect(info.contracts.usdc, deployer);
    await (await token.mint(agentWallet.address, DEPOSIT)).wait();
    const book = JSON.parse(await readFile(info.addressBookFile, "utf8"));
    const { note } = await depositNote({ signer: agentWallet, addressBook: book, value: DEPOSIT, seed: Wallet.createRandom().privateKey });
    await waitFor("the ASP approval", async () =>
      (await fetch(`${info.indexerUrl}/v1/asp/proofs/${note.label}`, { headers: { authorization: `Bearer ${info.indexerToken}` } })).ok,
    );
    const notes = await NoteVault.create(path.join(logDir, "test-notes.vault"), "test-passphrase-0123456789");
    await notes.save(note);
    const agent = new X402Agent({
      facilitator: new FacilitatorClient(info.relayerUrl),
      notes,
      network: { chainId: info.chainId, asset: info.contracts.usdc },
      acceptNotPrivate: true,
    });
    const response = await agent.fetch(seller.resourceUrl);
    expect(response.status).to.equal(200);
    expect(await response.json()).to.deep.equal(WEATHER_REPORT);
    expect(await token.balanceOf(payTo)).to.equal(PRICE);
  } finally {
    await seller.close();
    await facilitator.close();
    provider.destroy();
  }
}
