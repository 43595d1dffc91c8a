import { hexlify, randomBytes, type Wallet } from "ethers";
import { PrivacyPool__factory, TestUSDC__factory } from "../../types/ethers-contracts/index.js";
import type { PoolChain } from "../chain/pool-chain.js";
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
 * Returns what settle-x402 payers still hold once their authorization expired unused (the seller never settled
 * it, or its facilitator refused after funding) into the pool, whatever the amount, as the agent's refund note
 * (sdk deriveRefundSecrets: the agent finds and spends it with the secrets it has).
 *
 * The relaying party (REFUNDER_ROLE) calls Entrypoint.depositRefund with the payer's signed EIP-3009
 * ReceiveWithAuthorization of its whole balance: exempt from the minimum deposit, marked as a refund of the lease's
 * nullifier hash so that the ASP curator approves it at once and never counts it as a depositor. The payer needs
 * no gas and stays the refund's depositor, never the agent. A crash between steps loses nothing: a rerun finds the
 * refund deposit or the balance still at the payer.
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
  const usdc = TestUSDC__factory.connect(chain.deployment.usdc, chain.provider);
  const balance = await chain.call(() => usdc.balanceOf(payer.address));
  if (balance === 0n) return record("empty", 0n);

  const authorization = await refundAuthorization(chain, await token.read(), payer, balance, now);
  const data = chain.entrypoint.interface.encodeFunctionData("depositRefund", [
    chain.deployment.usdc,
    balance,
    refundPrecommitment,
    lease.nullifierHash,
    authorization,
  ]);
  const sent = await chain.sendFromRelayer({ to: chain.deployment.entrypoint, data });
  const receipt = await chain.call(() => sent.wait());
  if (receipt === null || receipt.status !== 1) throw new Error(`refund transaction ${sent.hash} of payer ${payer.address} reverted`);
  return record("deposited", balance, receipt.hash);
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
  const { from, validAfter, validBefore, nonce } = authorization;
  return { from, validAfter, validBefore, nonce, signature };
}

/** The payer's earlier refund deposit, when a previous sweep got that far. */
async function refundDepositOf(chain: PoolChain, payer: string, precommitment: bigint) {
  const pool = PrivacyPool__factory.connect(chain.deployment.privacyPool, chain.provider);
  const events = await chain.call(() => pool.queryFilter(pool.filters.Deposited(payer)));
  const refund = events.find((event) => event.args.precommitment === precommitment);
  return refund === undefined ? undefined : { value: refund.args.value, txHash: refund.transactionHash };
}
