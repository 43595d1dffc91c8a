import { formatEther, type Wallet } from "ethers";
import type { Logger } from "pino";
import type { IndexerMetrics } from "../metrics.js";

/**
 * Gas an ASP root publication may use: updateRoot stores the root, its depth and content id (about 100k gas); a
 * revoking one also marks the kept roots. A bound, not an estimate: it only decides whether to warn or refuse.
 */
const PUBLICATION_GAS = 300_000n;

/** What the postman key holds against what a publication costs. */
export interface PostmanFundsCheck {
  ok: boolean;
  detail: string;
}

/**
 * The postman key's ETH: a publication it cannot pay is not sent (it could never be mined and would hold the
 * nonce); below `lowBalanceWei` each check logs a warning. The balance is a metric either way.
 */
export class PostmanFunds {
  constructor(
    private readonly postman: Wallet,
    private readonly lowBalanceWei: bigint,
    private readonly metrics: IndexerMetrics,
    private readonly logger: Logger,
  ) {}

  async check(): Promise<PostmanFundsCheck> {
    const provider = this.postman.provider!;
    const [balance, fees] = await Promise.all([provider.getBalance(this.postman.address), provider.getFeeData()]);
    const cost = PUBLICATION_GAS * (fees.maxFeePerGas ?? fees.gasPrice ?? 0n);
    this.metrics.postmanBalance.set(Number(formatEther(balance)));
    const holds = `the postman ${this.postman.address} holds ${formatEther(balance)} ETH; a root publication costs up to ${formatEther(cost)} ETH`;
    if (balance < cost) {
      this.logger.error({ postman: this.postman.address, balanceEth: formatEther(balance) }, "postman cannot pay a root publication");
      return { ok: false, detail: `${holds}: fund it, no ASP root can be published until then` };
    }
    if (balance < this.lowBalanceWei) this.logger.warn({ postman: this.postman.address, balanceEth: formatEther(balance) }, "postman balance is low");
    return { ok: true, detail: holds };
  }

  /** Throws, naming the balance, when a publication could not be paid. */
  async assertCanPublish(): Promise<void> {
    const { ok, detail } = await this.check();
    if (!ok) throw new Error(`ASP root not published: ${detail}`);
  }
}
