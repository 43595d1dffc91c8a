import { hexlify, randomBytes, type Wallet } from "ethers";
import { TestUSDC__factory } from "../../types/ethers-contracts/index.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { paymentRecordHash, paymentRecordOf, REFUNDED_RECORD, type PaymentRecord } from "../settlement/payment-record.js";
import type { LeaseRecord, RelayerStore, SweepRecord } from "../store/relayer-store.js";
import { eip3009Types, type TokenDomainNames } from "../../x402/eip712-domain.js";
import { payerWallet } from "./payer-keys.js";
import { TokenDomainReader } from "./token-domain.js";

export interface PayerSweepDeps {
  store: RelayerStore;
  chain: PoolChain;
  payerKeySecret: string;
  log?: (line: string) => void;
}

/** How long the payer's refund authorization stays usable: long enough for one transaction to be mined. */
const REFUND_AUTHORIZATION_SECONDS = 3_600;

/**
 * Returns the payouts of settle-x402 payers whose authorization expired unused (the seller never settled it, or its
 * facilitator refused after funding) into the pool, each as the refund note its relay's proof committed to (the
 * payout under the spent note's label, with the agent's refund precommitment: the agent finds and spends it with the
 * secrets it has).
 *
 * Only what the chain recorded for the relay moves (Entrypoint.depositRefund checks it again): exactly the payout, by
 * the payer's signed EIP-3009 ReceiveWithAuthorization of that amount, once, after validBefore, and only while the
 * token says the authorization was never used. Whatever else sits at a payer (a stranger's transfer) stays there:
 * it is not the agent's money and never enters the pool through this path. A crash between steps loses nothing: a
 * rerun finds the refund recorded on chain, or the payout still at the payer.
 */
export async function sweepExpiredPayers(deps: PayerSweepDeps): Promise<SweepRecord[]> {
  const { store, chain } = deps;
  const latest = await chain.call(() => chain.provider.getBlock("latest"));
  if (latest === null) throw new Error("the chain has no latest block");
  // The chain's clock decides whether a seller can still use an authorization: block.timestamp < validBefore.
  const leases = await store.expiredUnsweptLeases(latest.timestamp);
  if (leases.length > 0) await assertRefunder(chain);
  const token = new TokenDomainReader(chain);
  const records: SweepRecord[] = [];
  for (const lease of leases) {
    const record = await sweepPayer(deps, token, lease, latest.timestamp);
    await store.recordSweep(record);
    deps.log?.(`${record.payer}: ${record.outcome} ${record.amount}${record.depositTxHash === null ? "" : ` in ${record.depositTxHash}`}`);
    records.push(record);
  }
  return records;
}

async function sweepPayer(deps: PayerSweepDeps, token: TokenDomainReader, lease: LeaseRecord, now: number): Promise<SweepRecord> {
  const { chain } = deps;
  const payer = payerWallet(deps.payerKeySecret, lease.nullifierHash);
  if (payer.address !== lease.recipient || lease.payment === null) {
    throw new Error(`lease ${lease.nullifierHash} is not a settled settle-x402 lease of this operator's payer keys`);
  }
  const record = (outcome: SweepRecord["outcome"], amount = 0n, depositTxHash: string | null = null): SweepRecord => ({
    nullifierHash: lease.nullifierHash,
    payer: payer.address,
    amount,
    outcome,
    depositTxHash,
    sweptAt: new Date().toISOString(),
  });

  const recorded = await chain.call(() => chain.pool.spendRecordOf(lease.nullifierHash));
  if (recorded === REFUNDED_RECORD) {
    const earlier = await refundDepositOf(chain, payer.address, lease.nullifierHash);
    return record("deposited", earlier.value, earlier.txHash);
  }
  const payment = paymentOf(lease, recorded);
  if (payment === null) return record("not-recorded");
  const usdc = TestUSDC__factory.connect(chain.deployment.usdc, chain.provider);
  if (await chain.call(() => usdc.authorizationState(payment.payer, payment.nonce))) return record("used");

  const authorization = await refundAuthorization(chain, await token.read(), payer, payment.amount, now);
  const data = chain.entrypoint.interface.encodeFunctionData("depositRefund", [chain.deployment.usdc, lease.nullifierHash, payment, authorization]);
  const sent = await chain.sendFromRelayer({ to: chain.deployment.entrypoint, data });
  const receipt = await chain.call(() => sent.wait());
  if (receipt === null || receipt.status !== 1) throw new Error(`refund transaction ${sent.hash} of payer ${payer.address} reverted`);
  return record("deposited", payment.amount, receipt.hash);
}

/**
 * The payment the pool recorded for the lease's relay (IEntrypoint.PaymentRecord), built from what the lease stored
 * before the relay left and checked against `recorded`, the pool's record; null when the chain records no such payment
 * (the note was spent by another transaction, or paid no payer). Whoever sent the relay, and however, it recorded
 * exactly this.
 */
function paymentOf(lease: LeaseRecord, recorded: string): PaymentRecord | null {
  const payment = paymentRecordOf(lease);
  if (payment === undefined) {
    throw new Error(
      `lease ${lease.nullifierHash} was made before leases stored their refund commitment; refund its payer by hand (Entrypoint.depositRefund with the relay's PaymentRecord)`,
    );
  }
  return recorded === paymentRecordHash(payment) ? payment : null;
}

async function assertRefunder(chain: PoolChain): Promise<void> {
  const { entrypoint, relayer } = chain;
  const role = await chain.call(() => entrypoint.REFUNDER_ROLE());
  if (!(await chain.call(() => entrypoint.hasRole(role, relayer.address)))) {
    throw new Error(`the relaying key ${relayer.address} lacks REFUNDER_ROLE on the entrypoint; the admin grants it with Entrypoint.grantRole`);
  }
}

/** The payer's ReceiveWithAuthorization of `value` to the entrypoint, under the token's EIP-712 domain. */
async function refundAuthorization(chain: PoolChain, { name, version }: TokenDomainNames, payer: Wallet, value: bigint, now: number) {
  const domain = { name, version, chainId: chain.deployment.chainId, verifyingContract: chain.deployment.usdc };
  const authorization = {
    from: payer.address,
    to: chain.deployment.entrypoint,
    value,
    validAfter: 0n,
    validBefore: BigInt(now + REFUND_AUTHORIZATION_SECONDS),
    nonce: hexlify(randomBytes(32)),
  };
  const signature = await payer.signTypedData(domain, eip3009Types("ReceiveWithAuthorization"), authorization);
  const { validAfter, validBefore, nonce } = authorization;
  return { validAfter, validBefore, nonce, signature };
}

/** The refund a previous sweep made of the payment of `payer`, whose origin's slot says REFUNDED. */
async function refundDepositOf(chain: PoolChain, payer: string, originNullifierHash: bigint) {
  const events = await chain.call(() => chain.entrypoint.queryFilter(chain.entrypoint.filters.RefundDeposited(payer)));
  const refund = events.find((event) => event.args.originNullifierHash === originNullifierHash);
  if (refund === undefined) throw new Error(`the pool marks the payment of ${payer} refunded, but no RefundDeposited names it`);
  return { value: refund.args.value, txHash: refund.transactionHash };
}
