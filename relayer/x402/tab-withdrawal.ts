import { BATCH_SETTLEMENT_ADDRESS, type ChannelConfig } from "@x402/evm";
import { computeChannelId } from "@x402/evm/batch-settlement/client";
import type { TabChannelConfig, TabRecord } from "../../sdk/index.js";
import { caip2NetworkOf } from "../../sdk/x402/networks.js";
import { IX402BatchSettlement__factory } from "../../types/ethers-contracts/index.js";
import type { PoolChain } from "../chain/pool-chain.js";

/** Where a tab's timed withdrawal stands after this round: just started, paid out to the tab's payer, or waiting for its delay. */
export type TabWithdrawalStep = "initiated" | "finalized" | "waiting";

/** The channel's id on the deployment's chain, computed here as x402BatchSettlement does: no read. */
function channelIdOf(chain: PoolChain, channel: TabChannelConfig): string {
  return computeChannelId(channel as ChannelConfig, caip2NetworkOf(chain.deployment.chainId));
}

/** What a tab's channel holds and what its seller claimed of it, as x402BatchSettlement reads now. */
export async function tabChannel(chain: PoolChain, channel: TabChannelConfig): Promise<{ balance: bigint; totalClaimed: bigint }> {
  const settlement = IX402BatchSettlement__factory.connect(BATCH_SETTLEMENT_ADDRESS, chain.provider);
  const [balance, totalClaimed] = await chain.call(() => settlement.channels(channelIdOf(chain, channel)));
  return { balance, totalClaimed };
}

/** Whether the tab's timed withdrawal is pending and its channel's withdraw delay has not passed at `now`. */
export async function tabWithdrawalWaiting(chain: PoolChain, tab: TabRecord, now: number): Promise<boolean> {
  const initiatedAt = await pendingSince(chain, tab.channel);
  return initiatedAt !== 0n && now < Number(initiatedAt) + tab.channel.withdrawDelay;
}

/** When the channel's pending timed withdrawal was started (unix seconds); 0 when none is pending. */
async function pendingSince(chain: PoolChain, channel: TabChannelConfig): Promise<bigint> {
  const settlement = IX402BatchSettlement__factory.connect(BATCH_SETTLEMENT_ADDRESS, chain.provider);
  const [, initiatedAt] = await chain.call(() => settlement.pendingWithdrawals(channelIdOf(chain, channel)));
  return initiatedAt;
}

/**
 * The way out of a private tab nobody drains (docs/design.md 13): its seller neither claims the rest nor refunds it,
 * and the agent, whose tab key could start the channel's withdrawal, is gone. Once the tab's lifetime ended (the
 * reclaimableAfter its proof bound), Entrypoint.withdrawTab, which anyone may call, has the tab's payer start the
 * timed withdrawal of everything unclaimed; once the channel's withdraw delay passed, the same call finalizes it, and
 * what came back is the sweep's to return as the agent's refund note. During the delay the seller can still claim
 * every voucher it holds, as the scheme promises it. The relaying key pays the gas and nothing else.
 *
 * Undefined while the tab's lifetime has not ended at `now`.
 */
export async function advanceTabWithdrawal(chain: PoolChain, originNullifierHash: bigint, tab: TabRecord, now: number): Promise<TabWithdrawalStep | undefined> {
  if (BigInt(now) < tab.reclaimableAfter) return undefined;
  const initiatedAt = await pendingSince(chain, tab.channel);
  if (initiatedAt !== 0n && now < Number(initiatedAt) + tab.channel.withdrawDelay) return "waiting";
  const data = chain.entrypoint.interface.encodeFunctionData("withdrawTab", [chain.deployment.usdc, originNullifierHash, tab]);
  const sent = await chain.sendFromRelayer({ to: chain.deployment.entrypoint, data });
  const receipt = await chain.call(() => sent.wait());
  if (receipt === null || receipt.status !== 1) throw new Error(`withdrawTab transaction ${sent.hash} of the tab of note ${originNullifierHash} reverted`);
  return initiatedAt === 0n ? "initiated" : "finalized";
}
