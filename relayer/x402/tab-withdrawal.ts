import { BATCH_SETTLEMENT_ADDRESS } from "@x402/evm";
import type { Wallet } from "ethers";
import { IX402BatchSettlement__factory } from "../../types/ethers-contracts/index.js";
import type { PoolChain } from "../chain/pool-chain.js";
import type { TabLeasePayment } from "./tab-lease.js";

/** How long after a tab's deposit window the payer sweep takes back what nobody drained: two days, twice the SDK's tab lifetime. */
export const DEFAULT_TAB_WITHDRAW_AFTER_SECONDS = 172_800;

/** Gas the payer's withdrawal calls are funded for, each (initiateWithdraw ~50k, finalizeWithdraw ~70k), with room. */
const PAYER_CALL_GAS = 150_000n;

/** Where a tab's timed withdrawal stands after this round: just started, paid out to the payer, or waiting for its delay. */
export type TabWithdrawalStep = "initiated" | "finalized" | "waiting";

/**
 * The operator's way out for a private tab nobody drains (docs/design.md 13): its seller neither claims the rest nor
 * refunds it, and the agent, whose key could start the channel's withdrawal, is gone. `withdrawAfterSeconds` past the
 * deposit's window, the payer (whose key only the operator derives) starts the timed withdrawal of everything
 * unclaimed; once the channel's withdraw delay passed it finalizes it, and what came back is the payer sweep's to
 * return as the agent's refund note. During the delay the seller can still claim every voucher it holds, as the scheme
 * promises it. The payer holds no ETH: the relaying key sends it what each call costs, when it lacks it.
 *
 * `unclaimed`: what the channel holds beyond its claims, read by the caller. Undefined while the tab is younger than
 * that, or its lease was made before leases kept the channel's terms.
 */
export async function advanceIdleTabWithdrawal(
  chain: PoolChain,
  payer: Wallet,
  tab: TabLeasePayment,
  { unclaimed, now, withdrawAfterSeconds }: { unclaimed: bigint; now: number; withdrawAfterSeconds: number },
): Promise<TabWithdrawalStep | undefined> {
  const { channelConfig } = tab;
  const validBefore = Number(tab.deposit.authorization.erc3009Authorization.validBefore);
  if (channelConfig === undefined || now < validBefore + withdrawAfterSeconds) return undefined;
  const settlement = IX402BatchSettlement__factory.connect(BATCH_SETTLEMENT_ADDRESS, payer.connect(chain.provider));
  const [, initiatedAt] = await chain.call(() => settlement.pendingWithdrawals(tab.channelId));
  if (initiatedAt === 0n) {
    await fundPayerGas(chain, payer.address);
    await mined(chain, () => settlement.initiateWithdraw(channelConfig, unclaimed, { gasLimit: PAYER_CALL_GAS }));
    return "initiated";
  }
  if (now < Number(initiatedAt) + channelConfig.withdrawDelay) return "waiting";
  await fundPayerGas(chain, payer.address);
  await mined(chain, () => settlement.finalizeWithdraw(channelConfig, { gasLimit: PAYER_CALL_GAS }));
  return "finalized";
}

/** Tops the payer up, from the relaying key, to what one withdrawal call costs at today's fees. */
async function fundPayerGas(chain: PoolChain, payer: string): Promise<void> {
  const [fees, balance] = await Promise.all([chain.call(() => chain.provider.getFeeData()), chain.call(() => chain.provider.getBalance(payer))]);
  const perGas = fees.maxFeePerGas ?? fees.gasPrice;
  if (perGas === null) throw new Error("the chain names no gas price");
  const needed = 2n * PAYER_CALL_GAS * perGas;
  if (balance >= needed) return;
  await mined(chain, () => chain.sendFromRelayer({ to: payer, value: needed - balance }));
}

async function mined(chain: PoolChain, send: () => Promise<{ hash: string; wait(): Promise<{ status: number | null } | null> }>): Promise<void> {
  const sent = await chain.call(send);
  const receipt = await chain.call(() => sent.wait());
  if (receipt === null || receipt.status !== 1) throw new Error(`transaction ${sent.hash} reverted`);
}
