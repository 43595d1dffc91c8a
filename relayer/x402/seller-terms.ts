import { ZeroAddress } from "ethers";
import { chainIdOfNetwork, domainNamedBy, missingDomainMessage } from "../../sdk/x402/index.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";
import type { TokenDomainReader } from "./token-domain.js";

/** The range of a seller's maxTimeoutSeconds that settle-x402 pays (supported's `settleX402`). */
export interface PaymentWindow {
  minimumSeconds: number;
  maximumSeconds: number;
}

/**
 * The minimum covers proving and funding (npm run bench:settle on the 2-core machine, settle-x402 server time:
 * p95 2.1 s sequential, 6.2 s with 4 agents at once), the 6 s by which both reference facilitators want
 * validBefore ahead of their clock when they verify, and about 8 s for the agent's retry to the seller and a
 * deeper proof queue. The maximum bounds how long a refused payment's money waits at the payer: the sweep returns
 * it only once the authorization expired.
 */
export const DEFAULT_PAYMENT_WINDOW: PaymentWindow = { minimumSeconds: 20, maximumSeconds: 3600 };

/** The window when the seller's entry names none (the reference sellers' default). */
const DEFAULT_MAX_TIMEOUT_SECONDS = 60;

/** The reference facilitators refuse an authorization whose validBefore is less than this far ahead. */
export const FACILITATOR_MARGIN_SECONDS = 6;

const NOTHING_SPENT = "Nothing was spent.";

/** What the check reads of a seller's entry, of either scheme a payer pays (`exact`, or a tab's `batch-settlement`). */
export interface SellerTermsEntry {
  network: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds?: number;
  extra?: unknown;
}

/**
 * settle-x402's pre-flight (docs/design.md 6): refuses, before anything is reserved or proven, every entry the
 * seller's facilitator would refuse once the payer is funded, as far as this relayer can know it. Returns the
 * entry completed with the default window; the seller's own fields are kept as sent (a v2 payment echoes them).
 */
export class SellerTermsCheck {
  constructor(
    private readonly deps: { chain: PoolChain; token: TokenDomainReader; window: PaymentWindow },
  ) {}

  async check<E extends SellerTermsEntry>(entry: E): Promise<E & { maxTimeoutSeconds: number }> {
    const { chain } = this.deps;
    if (chainIdOfNetwork(entry.network) !== chain.deployment.chainId) {
      throw refused(`accepts.network is ${entry.network}; this facilitator pays on ${chain.network}.`);
    }
    if (entry.asset.toLowerCase() !== chain.deployment.usdc.toLowerCase()) {
      throw refused(`accepts.asset is ${entry.asset}; this facilitator pays in USDC ${chain.deployment.usdc}.`);
    }
    if (entry.payTo.toLowerCase() === ZeroAddress) {
      throw refused("accepts.payTo is the zero address: the token refuses a transfer to it, so the seller could never be paid.");
    }
    const maxTimeoutSeconds = entry.maxTimeoutSeconds ?? DEFAULT_MAX_TIMEOUT_SECONDS;
    this.checkWindow(maxTimeoutSeconds);
    const named = domainNamedBy(entry);
    if (named === undefined) throw new RelayerError("INVALID_REQUEST", `${missingDomainMessage(entry)} ${NOTHING_SPENT}`);
    const token = await this.deps.token.read();
    if (named.name !== token.name || named.version !== token.version) {
      throw refused(
        `accepts.extra names the EIP-712 domain name "${named.name}", version "${named.version}", but the token ${entry.asset} ` +
          `signs under name "${token.name}", version "${token.version}": an authorization signed under the seller's words could never execute. ` +
          "Ask the seller to correct extra.",
      );
    }
    return { ...entry, maxTimeoutSeconds };
  }

  private checkWindow(seconds: number): void {
    const { minimumSeconds, maximumSeconds } = this.deps.window;
    if (seconds < minimumSeconds) {
      throw refused(
        `accepts.maxTimeoutSeconds is ${seconds} s, shorter than the ${minimumSeconds} s this facilitator needs: the authorization's ` +
          `window starts before the proof, proving and funding take several seconds, and the seller's facilitator wants validBefore ` +
          `at least ${FACILITATOR_MARGIN_SECONDS} s ahead when it verifies. Ask the seller for a window of at least ${minimumSeconds} s.`,
      );
    }
    if (seconds > maximumSeconds) {
      throw refused(
        `accepts.maxTimeoutSeconds is ${seconds} s, longer than this facilitator's ceiling of ${maximumSeconds} s: a payment the seller ` +
          "refuses is refunded only after its authorization expires, so a longer window would hold the money that long.",
      );
    }
  }
}

function refused(problem: string): RelayerError {
  return new RelayerError("INVALID_REQUEST", `${problem} ${NOTHING_SPENT}`);
}
