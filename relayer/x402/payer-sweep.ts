import { parseUnits, type Wallet } from "ethers";
import { Entrypoint__factory, PrivacyPool__factory, TestUSDC__factory } from "../../types/ethers-contracts/index.js";
import type { PoolChain } from "../chain/pool-chain.js";
import type { LeaseRecord, RelayerStore, SweepRecord } from "../store/relayer-store.js";
import { payerWallet } from "./payer-keys.js";

export interface PayerSweepDeps {
  store: RelayerStore;
  chain: PoolChain;
  payerKeySecret: string;
  log?: (line: string) => void;
}

/** Gas of one approve plus one deposit into a large tree (bench/gas measures ~460k at 100k leaves), with margin. */
const REFUND_GAS = 700_000n;

/**
 * Returns what settle-x402 payers still hold once their authorization expired unused into the pool, as the
 * agent's refund note (sdk deriveRefundSecrets: the agent finds and spends it with the secrets it has).
 *
 * The payer deposits its own balance under the lease's refund precommitment, its gas sent by the relaying party:
 * the refund's depositor is the single-use payer, never the agent, and a crash between steps loses nothing (a
 * rerun finds the refund deposit or the balance still at the payer). A balance below the pool's minimum deposit
 * cannot become a note: it is recorded `held` and stays at the payer, whose key the operator derives at will.
 */
export async function sweepExpiredPayers(deps: PayerSweepDeps): Promise<SweepRecord[]> {
  const { store, chain } = deps;
  const latest = await chain.call(() => chain.provider.getBlock("latest"));
  if (latest === null) throw new Error("the chain has no latest block");
  // The chain's clock decides whether a seller can still use an authorization: block.timestamp < validBefore.
  const leases = await store.expiredUnsweptLeases(latest.timestamp);
  const minimumDeposit = leases.length === 0 ? 0n : await chain.minimumDeposit();
  const records: SweepRecord[] = [];
  for (const lease of leases) {
    const record = await sweepPayer(deps, lease, minimumDeposit);
    await store.recordSweep(record);
    deps.log?.(`${record.payer}: ${record.outcome} ${record.amount}${record.depositTxHash === null ? "" : ` in ${record.depositTxHash}`}`);
    records.push(record);
  }
  return records;
}

async function sweepPayer(deps: PayerSweepDeps, lease: LeaseRecord, minimumDeposit: bigint): Promise<SweepRecord> {
  const { chain } = deps;
  const payer = payerWallet(deps.payerKeySecret, lease.nullifierHash).connect(chain.provider);
  if (payer.address !== lease.recipient || lease.payment === null) {
    throw new Error(`lease ${lease.nullifierHash} is not a settle-x402 lease of this operator's payer keys`);
  }
  const { refundPrecommitment } = lease.payment;
  const record = (outcome: SweepRecord["outcome"], amount: bigint, depositTxHash: string | null = null): SweepRecord => ({
    nullifierHash: lease.nullifierHash,
    payer: payer.address,
    amount,
    outcome,
    depositTxHash,
    sweptAt: new Date().toISOString(),
  });

  const earlier = await refundDepositOf(chain, payer.address, refundPrecommitment);
  if (earlier !== undefined) return record("deposited", earlier.value, earlier.txHash);
  const usdc = TestUSDC__factory.connect(chain.deployment.usdc, payer);
  const balance = await chain.call(() => usdc.balanceOf(payer.address));
  if (balance === 0n) return record("empty", 0n);
  if (balance < minimumDeposit) return record("held", balance);

  await fundGas(chain, payer);
  const entrypoint = Entrypoint__factory.connect(chain.deployment.entrypoint, payer);
  const approval = await chain.call(async () => usdc.approve(chain.deployment.entrypoint, balance));
  await chain.call(() => approval.wait());
  const receipt = await chain.call(async () => (await entrypoint.deposit(chain.deployment.usdc, balance, refundPrecommitment)).wait());
  return record("deposited", balance, receipt!.hash);
}

/** The payer's earlier refund deposit, when a previous sweep got that far. */
async function refundDepositOf(chain: PoolChain, payer: string, precommitment: bigint) {
  const pool = PrivacyPool__factory.connect(chain.deployment.privacyPool, chain.provider);
  const events = await chain.call(() => pool.queryFilter(pool.filters.Deposited(payer)));
  const refund = events.find((event) => event.args.precommitment === precommitment);
  return refund === undefined ? undefined : { value: refund.args.value, txHash: refund.transactionHash };
}

/** Sends the payer the ETH its two refund transactions cost, from the relaying party. */
async function fundGas(chain: PoolChain, payer: Wallet): Promise<void> {
  const fees = await chain.call(() => chain.provider.getFeeData());
  const budget = REFUND_GAS * (fees.maxFeePerGas ?? fees.gasPrice ?? parseUnits("1", "gwei"));
  const held = await chain.call(() => chain.provider.getBalance(payer.address));
  if (held >= budget) return;
  const funding = await chain.sendFromRelayer({ to: payer.address, value: budget - held });
  await chain.call(() => funding.wait());
}
