import { expect } from "chai";
import type { Provider } from "ethers";

/** Nothing of `address` in the mined transaction: not its sender, recipient, input, log topics or data. */
export async function expectAbsentFrom(provider: Provider, txHash: string, address: string): Promise<void> {
  const needle = address.slice(2).toLowerCase();
  const tx = await provider.getTransaction(txHash);
  const receipt = await provider.getTransactionReceipt(txHash);
  expect(tx, txHash).to.not.equal(null);
  const seen = [tx!.from, tx!.to ?? "", tx!.data, ...receipt!.logs.flatMap((log) => [...log.topics, log.data])];
  for (const field of seen) expect(field.toLowerCase(), `${txHash} mentions the agent`).to.not.contain(needle);
}
