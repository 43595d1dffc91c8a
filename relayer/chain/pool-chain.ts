import {
  type FeeData,
  FetchRequest,
  getAddress,
  dataLength,
  isError,
  JsonRpcProvider,
  Transaction,
  type Provider,
  type TransactionReceipt,
  type TransactionRequest,
  type TransactionResponse,
  Wallet,
} from "ethers";
import { namePublicSignals, type SolidityWithdrawProof, type Withdrawal } from "../../sdk/index.js";
import {
  Entrypoint__factory,
  IPrivacyPool__factory,
  TestUSDC__factory,
  type Entrypoint,
  type IPrivacyPool,
} from "../../types/ethers-contracts/index.js";
import { RelayerError } from "../errors.js";
import { RelayQueue } from "./relay-queue.js";

/** The deployed contracts of one chain, from its address book (deployments/<chainId>.json). */
export interface PoolDeployment {
  chainId: number;
  entrypoint: string;
  privacyPool: string;
  usdc: string;
  scope: bigint;
}

/** Revert reasons of Entrypoint.relay and relayAccessFee / PrivacyPool.withdraw, as the caller should read them. */
const REVERT_MEANINGS: Record<string, RelayerError> = {
  NullifierAlreadySpent: new RelayerError("ALREADY_SPENT", "The note is already spent on chain. Use nextDeposit from the settlement that spent it."),
  UnknownStateRoot: new RelayerError("INVALID_PROOF", "The state root the proof used is no longer in the pool's root history. Retry: a fresh proof uses the current root."),
  UnknownAspRoot: new RelayerError("INVALID_PROOF", "The ASP root the proof used is no longer in the entrypoint's root window. Retry with the current ASP root."),
  AspRootRevoked: new RelayerError("INVALID_PROOF", "The ASP root the proof used was revoked because a label left the association set. Retry: a fresh proof uses the latest root, unless this note's label was the one excluded."),
  InvalidProof: new RelayerError("INVALID_PROOF", "The pool's verifier rejected the proof. Check the note fields and retry."),
  ContextMismatch: new RelayerError("INVALID_PROOF", "The proof is bound to other relay data than submitted."),
  AccessFeeTreasuryMismatch: new RelayerError(
    "AUTHORIZATION_REJECTED",
    "The entrypoint's access-fee treasury is no longer this facilitator's treasury, so the access fee would not count; the operator must set them alike. Nothing was spent.",
  ),
};

/** Entrypoint.relay's arguments (and relayAccessFee's): withdrawal, proof, scope and the size of the proof's state tree. */
type RelayArgs = readonly [Withdrawal, SolidityWithdrawProof, bigint, bigint];

/** The entrypoint's calls that send one withdrawal: a relay, or an access fee paid out of a note. */
type RelayMethod = "relay" | "relayAccessFee";

/** abi.encode(TabOpening): the relay data of a private tab's opening, which is never batched. */
const TAB_OPENING_BYTES = 320;

/** Entrypoint.relayBatch's arguments: the relays' withdrawals, proofs and state tree sizes, and the scope. */
type RelayBatchArgs = [Withdrawal[], SolidityWithdrawProof[], bigint, bigint[]];

/** A relay ready to leave, alone or in a batch. */
interface PendingRelay {
  args: RelayArgs;
  hooks: RelayHooks;
}

/** A relay's gas limit over its estimate, for what varies besides the insert (storage slots warm or fresh). */
const RELAY_GAS_MARGIN_PERCENT = 110n;
/**
 * Gas allowed per level of the state tree on top of the estimate. The change note's insert either hashes a level
 * (a Poseidon call) or stores a fresh side node (22.1k), by the bits of its leaf index, so relays at one depth
 * differ by up to a hash per level. Unused gas is not charged: a generous limit costs nothing but balance.
 */
const INSERT_LEVEL_GAS = 50_000n;

/** `relay` with `then` run once its transaction has reached the node, after its own onSent. */
function onSentAlso(relay: PendingRelay, then: () => void): PendingRelay {
  const { onSent } = relay.hooks;
  return {
    ...relay,
    hooks: {
      ...relay.hooks,
      onSent: async (txHash) => {
        then();
        await onSent?.(txHash);
      },
    },
  };
}

/** A relay's (or a batch's) gas limit over its estimate at state tree depth `depth`: the margin and room for every level. */
function gasLimitOver(estimate: bigint, depth: bigint): bigint {
  return (estimate * RELAY_GAS_MARGIN_PERCENT) / 100n + (depth + 1n) * INSERT_LEVEL_GAS;
}

/** The deepest state tree among a batch's proofs: its inserts happen at least that deep. */
function deepestStateTree(proofs: SolidityWithdrawProof[]): bigint {
  return proofs.reduce((deepest, proof) => {
    const depth = namePublicSignals(proof.pubSignals).stateTreeDepth;
    return depth > deepest ? depth : deepest;
  }, 0n);
}

/**
 * How often a pending relay's receipt is looked for. Every settle waits for its relay to be mined, and finds it half
 * a poll after its block on average: ethers' default (4 s) would add up to two of Base's 2 s blocks to each; 100 ms
 * adds 50 ms, at ten block-number requests a second while relays are pending.
 */
export const RECEIPT_POLL_MS = 100;

/** Steps a caller of PoolChain.relay can hook into. */
/** A relay's gas limit and fees, set from the network's fee data instead of the relayer's estimate (PoolChain.relayCapped). */
export type RelayFees = (fees: FeeData) => Pick<TransactionRequest, "gasLimit" | "maxFeePerGas" | "maxPriorityFeePerGas">;

export interface RelayHooks {
  /**
   * With the signed transaction's hash, before it is broadcast; may refuse by throwing, and then nothing is sent.
   * Once it returns, the transaction may be mined whatever happens to this process.
   */
  onSigned?: (txHash: string) => Promise<void>;
  /** Once the node accepted the transaction, before it is mined. */
  onSent?: (txHash: string) => Promise<void>;
}

/** Relay transactions and the reads the relayer needs, through the generated TypeChain bindings. */
export class PoolChain {
  readonly entrypoint: Entrypoint;
  readonly pool: IPrivacyPool;
  /** The relaying party: it signs relays and pays their gas. */
  readonly relayer: Wallet;
  /** The tail of the relaying party's transactions, which leave one at a time (see inNonceOrder). */
  private sending: Promise<unknown> = Promise.resolve();
  /** Gas estimates by call and state tree depth (relayGasLimit). */
  private readonly relayGasByDepth = new Map<string, bigint>();
  /** Batches the relays that arrive while another is being sent; absent when batching is off. */
  private readonly queue?: RelayQueue<PendingRelay>;

  /**
   * @param maxBatch The most relays one transaction carries (Entrypoint.relayBatch); 1 sends each alone.
   * @param inclusionTimeoutMs How long a relay is waited for once sent; then it is SETTLEMENT_UNCERTAIN with its hash.
   */
  constructor(
    readonly provider: Provider,
    relayerKey: Wallet,
    readonly deployment: PoolDeployment,
    maxBatch = 1,
    private readonly inclusionTimeoutMs?: number,
  ) {
    this.relayer = relayerKey.connect(provider);
    this.entrypoint = Entrypoint__factory.connect(deployment.entrypoint, this.relayer);
    this.pool = IPrivacyPool__factory.connect(deployment.privacyPool, provider);
    if (maxBatch > 1) this.queue = new RelayQueue((relays, left) => this.sendRelays(relays.map((relay) => onSentAlso(relay, left))), maxBatch);
  }

  /**
   * A chain behind the JSON-RPC at `rpcUrl`. Every RPC request gives up after `rpcTimeoutMs` (ethers' default
   * is five minutes) with a TIMEOUT error, which `call` reports as CHAIN_UNAVAILABLE. No answer is cached: a
   * block number or nonce even 250 ms old (ethers' default cache) can be one the relayer's own last
   * transaction already made stale. A relay's receipt is looked for every RECEIPT_POLL_MS while it is pending.
   */
  static connect(rpcUrl: string, relayerPrivateKey: string, deployment: PoolDeployment, rpcTimeoutMs: number, maxBatch = 1, inclusionTimeoutMs?: number): PoolChain {
    const request = new FetchRequest(rpcUrl);
    request.timeout = rpcTimeoutMs;
    const provider = new JsonRpcProvider(request, deployment.chainId, { staticNetwork: true, cacheTimeout: -1, pollingInterval: RECEIPT_POLL_MS });
    return new PoolChain(provider, new Wallet(relayerPrivateKey), deployment, maxBatch, inclusionTimeoutMs);
  }

  get network(): string {
    return `eip155:${this.deployment.chainId}`;
  }

  async isNullifierSpent(nullifierHash: bigint): Promise<boolean> {
    return this.call(() => this.pool.isNullifierSpent(nullifierHash));
  }

  /**
   * Submits a withdrawal through Entrypoint.relay, or with others through Entrypoint.relayBatch when batching is
   * on and relays are waiting, and waits for it to be mined. `stateTreeSize` is the size of the state tree whose
   * root the proof uses (the indexer's witness or the quote names it). Simulates first, so a revert costs no gas and comes
   * back as the typed error it means. `onSigned` runs with the hash right before the transaction leaves (it may
   * refuse by throwing); `onSent` runs with its hash before it is mined. A failure after `onSigned` returned is
   * SETTLEMENT_UNCERTAIN; a relay mined but reverted is RelayRevertedError (it says nothing of who spent the note).
   */
  async relay(withdrawal: Withdrawal, proof: SolidityWithdrawProof, stateTreeSize: bigint, hooks: RelayHooks = {}): Promise<TransactionReceipt> {
    const relay: PendingRelay = { args: [withdrawal, proof, this.deployment.scope, stateTreeSize], hooks };
    // A tab's relay deposits into its channel in the same call, which relayBatch refuses (TabOpeningNotBatched).
    return this.queue && dataLength(withdrawal.data) !== TAB_OPENING_BYTES ? this.queue.submit(relay) : this.relayAlone(relay);
  }

  /**
   * Submits an access fee paid out of a note through Entrypoint.relayAccessFee (`withdrawal.data` is its
   * AccessFeeData) and waits for it to be mined: alone, never batched, and otherwise as `relay` (simulated first, the
   * same hooks, the same errors).
   */
  async relayAccessFee(withdrawal: Withdrawal, proof: SolidityWithdrawProof, stateTreeSize: bigint, hooks: RelayHooks = {}): Promise<TransactionReceipt> {
    return this.relayAlone({ args: [withdrawal, proof, this.deployment.scope, stateTreeSize], hooks }, "relayAccessFee");
  }

  /**
   * Submits a relay alone, never batched, under the gas limit and fees `feesFor` sets from the network's fee data
   * (a seller's payment whose fee caps what its relay may cost: seller/shielded-payments.ts cappedFeeFields);
   * otherwise as `relay` (simulated first, the same hooks, the same errors).
   */
  async relayCapped(
    withdrawal: Withdrawal,
    proof: SolidityWithdrawProof,
    stateTreeSize: bigint,
    feesFor: RelayFees,
  ): Promise<TransactionReceipt> {
    return this.relayAlone({ args: [withdrawal, proof, this.deployment.scope, stateTreeSize], hooks: {} }, "relay", feesFor);
  }

  private async relayAlone(
    { args, hooks }: PendingRelay,
    method: RelayMethod = "relay",
    feesFor?: RelayFees,
  ): Promise<TransactionReceipt> {
    const send = this.entrypoint[method];
    await this.call(() => send.staticCall(...args));
    const request = await this.call(async () => ({
      ...(await send.populateTransaction(...args)),
      ...(feesFor === undefined ? { gasLimit: await this.relayGasLimit(method, args) } : feesFor(await this.provider.getFeeData())),
    }));
    const tx = await this.inNonceOrder(async () => {
      const { signed, hash } = await this.signRelay(request);
      await hooks.onSigned?.(hash);
      return this.broadcast(signed, hash);
    });
    await hooks.onSent?.(tx.hash);
    return feesFor === undefined ? this.mined(tx) : this.minedOrWithdrawn(tx);
  }

  /**
   * A relay under a fee cap: mined, or, when it is not mined in time (a base fee above its cap keeps it out of every
   * block, and with it every later transaction of the relaying key, which follow its nonce), replaced at the market's
   * price by a transfer of nothing to the relaying key itself. The relay then never happens (nothing was spent: the
   * settle can be tried again) and the key's later transactions go on; the replacement costs the key 21,000 gas.
   */
  private async minedOrWithdrawn(tx: TransactionResponse): Promise<TransactionReceipt> {
    try {
      return await this.mined(tx);
    } catch (error) {
      if (!(error instanceof RelayerError && error.code === "SETTLEMENT_UNCERTAIN")) throw error;
      const replacement = await this.replaceWithNothing(tx).catch(() => undefined);
      // Not replaced (the relay was mined meanwhile, or the node refused the replacement): the outcome stays the chain's.
      if (replacement === undefined) return this.mined(tx);
      return tx.wait(1, this.inclusionTimeoutMs).then(
        (receipt) => {
          if (receipt === null || receipt.status !== 1) throw new RelayRevertedError(tx.hash);
          return receipt;
        },
        (waited: unknown) => {
          if (isError(waited, "TRANSACTION_REPLACED") && waited.cancelled) {
            throw new RelayerError(
              "CHAIN_UNAVAILABLE",
              `The relay ${tx.hash} was not mined under its fee cap (the chain's base fee is above what the payment's fee pays) and was withdrawn by ${replacement}; nothing was spent. Retry once fees fall.`,
            );
          }
          if (isError(waited, "CALL_EXCEPTION") && waited.receipt) throw new RelayRevertedError(tx.hash);
          throw uncertain(tx.hash, this.explain(waited));
        },
      );
    }
  }

  /** Sends, with `tx`'s nonce, a transfer of nothing to the relaying key at the market's price and a tenth above `tx`'s; its hash. */
  private async replaceWithNothing(tx: TransactionResponse): Promise<string> {
    const fees = await this.call(() => this.provider.getFeeData());
    const bumped = (value: bigint | null) => ((value ?? 0n) * 11n) / 10n + 1n;
    const maxFeePerGas = [fees.maxFeePerGas ?? 0n, bumped(tx.maxFeePerGas)].reduce((a, b) => (a > b ? a : b));
    const tip = [fees.maxPriorityFeePerGas ?? 0n, bumped(tx.maxPriorityFeePerGas)].reduce((a, b) => (a > b ? a : b));
    const signed = await this.relayer.signTransaction(
      await this.relayer.populateTransaction({
        to: this.relayer.address,
        value: 0n,
        nonce: tx.nonce,
        gasLimit: 21_000n,
        maxFeePerGas,
        maxPriorityFeePerGas: tip < maxFeePerGas ? tip : maxFeePerGas,
      }),
    );
    return (await this.call(() => this.provider.broadcastTransaction(signed))).hash;
  }

  /**
   * One transaction for `relays`: relayBatch when there are several and the batch simulates, else each alone (a
   * batch reverts whole, so a relay the chain would refuse goes alone and comes back with its own error). Every
   * relay's onSigned runs before the batch leaves; one that refuses keeps it from leaving, and the others, whose
   * leases already hold its hash, answer uncertain until their leases go stale (nothing was sent).
   */
  private async sendRelays(relays: PendingRelay[]): Promise<PromiseSettledResult<TransactionReceipt>[]> {
    const alone = () => Promise.allSettled(relays.map((relay) => this.relayAlone(relay)));
    if (relays.length === 1) return alone();
    const args: RelayBatchArgs = [relays.map((r) => r.args[0]), relays.map((r) => r.args[1]), this.deployment.scope, relays.map((r) => r.args[3])];
    // The estimate is the batch's simulation: a batch the chain would revert has none.
    const estimate = await this.entrypoint.relayBatch.estimateGas(...args).catch(() => undefined);
    if (estimate === undefined) return alone();

    const refusals = new Map<number, unknown>();
    let outcome: PromiseSettledResult<TransactionReceipt>;
    try {
      const request = await this.call(async () => ({
        ...(await this.entrypoint.relayBatch.populateTransaction(...args)),
        gasLimit: gasLimitOver(estimate, deepestStateTree(args[1])),
      }));
      const tx = await this.inNonceOrder(async () => {
        const { signed, hash } = await this.signRelay(request);
        await Promise.all(relays.map((relay, i) => relay.hooks.onSigned?.(hash).catch((error: unknown) => refusals.set(i, error))));
        if (refusals.size > 0) throw uncertain(hash, new Error("a relay of the batch refused it; the batch was not sent"));
        return this.broadcast(signed, hash);
      });
      await Promise.all(relays.map((relay) => relay.hooks.onSent?.(tx.hash)));
      outcome = { status: "fulfilled", value: await this.mined(tx) };
    } catch (reason) {
      outcome = { status: "rejected", reason };
    }
    const skipped = outcome.status === "fulfilled" ? this.skippedIn(outcome.value) : new Set<bigint>();
    return relays.map((relay, i) => {
      if (refusals.has(i)) return { status: "rejected", reason: refusals.get(i) };
      const nullifierHash = namePublicSignals(relay.args[1].pubSignals).nullifierHash;
      return skipped.has(nullifierHash) ? { status: "rejected", reason: skippedInBatch(outcome) } : outcome;
    });
  }

  /** The nullifier hashes a mined batch skipped (WithdrawalSkipped): notes spent by someone else before it was mined. */
  private skippedIn(receipt: TransactionReceipt): Set<bigint> {
    const skipped = new Set<bigint>();
    for (const log of receipt.logs) {
      if (log.address.toLowerCase() !== this.deployment.privacyPool.toLowerCase()) continue;
      const event = this.pool.interface.parseLog(log);
      if (event?.name === "WithdrawalSkipped") skipped.add(BigInt(event.args.spentNullifierHash));
    }
    return skipped;
  }

  private async signRelay(request: TransactionRequest): Promise<{ signed: string; hash: string }> {
    const signed = await this.call(() => this.signWithNextNonce(request));
    return { signed, hash: Transaction.from(signed).hash! };
  }

  /**
   * From here on the transaction may be mined whatever happens to this process: failures are uncertain. A
   * broadcast that timed out may have reached the node, so it is not "nothing was spent".
   */
  private broadcast(signed: string, hash: string): Promise<TransactionResponse> {
    return this.call(() => this.provider.broadcastTransaction(signed)).catch((error: unknown) => {
      throw uncertain(hash, error);
    });
  }

  private async mined(tx: TransactionResponse): Promise<TransactionReceipt> {
    const receipt = await tx.wait(1, this.inclusionTimeoutMs).catch((error: unknown) => {
      // ethers rejects a mined revert with its receipt; anything else left the outcome unknown.
      if (isError(error, "CALL_EXCEPTION") && error.receipt) throw new RelayRevertedError(tx.hash);
      if (isError(error, "TIMEOUT") && error.shortMessage === "wait for transaction timeout") {
        throw uncertain(tx.hash, new Error(`it was not mined within ${this.inclusionTimeoutMs} ms`));
      }
      throw uncertain(tx.hash, this.explain(error));
    });
    if (receipt === null || receipt.status !== 1) throw new RelayRevertedError(tx.hash);
    return receipt;
  }

  /** Sends a transaction of the relaying party (one not a relay: the payer sweep's gas), in nonce order with relays. */
  async sendFromRelayer(request: TransactionRequest): Promise<TransactionResponse> {
    return this.inNonceOrder(() => this.call(async () => this.provider.broadcastTransaction(await this.signWithNextNonce(request))));
  }

  /**
   * Runs `send` once every transaction of the relaying party started before it has reached the node. Each takes
   * its nonce from the node's pending count right there, so transactions leave in nonce order with no gap: a
   * node that cannot queue a gap (Hardhat's automine) would refuse a later nonce that overtook an earlier one, a
   * public node would hold it back until the gap fills. Another process relaying with the same key at the same
   * moment can still take the same nonce: give each relayer instance a key of its own.
   */
  private inNonceOrder<T>(send: () => Promise<T>): Promise<T> {
    const sent = this.sending.then(send, send);
    this.sending = sent.catch(() => undefined);
    return sent;
  }

  private async signWithNextNonce(request: TransactionRequest): Promise<string> {
    const nonce = await this.provider.getTransactionCount(this.relayer.address, "pending");
    return this.relayer.signTransaction(await this.relayer.populateTransaction({ ...request, nonce }));
  }

  /**
   * The gas limit of a relay: the verifier's fixed cost plus the change note's insert, which depends on the state
   * tree's depth and on its leaf index's bits. One estimate per depth, with room for an insert that hashes every
   * level and deepens the tree by one, serves every later relay at that depth: the hot path skips an estimate
   * (an EVM execution per binary-search step).
   */
  private async relayGasLimit(method: RelayMethod, args: RelayArgs): Promise<bigint> {
    const depth = namePublicSignals(args[1].pubSignals).stateTreeDepth;
    // Each kind of relay data (its length) pays out differently: a tab's relay also deposits into its channel.
    const key = `${method}:${dataLength(args[0].data)}:${depth}`;
    let estimate = this.relayGasByDepth.get(key);
    if (estimate === undefined) {
      estimate = await this.entrypoint[method].estimateGas(...args);
      this.relayGasByDepth.set(key, estimate);
    }
    return gasLimitOver(estimate, depth);
  }

  /**
   * What the mined transaction `txHash` did for the note of `nullifierHash`, read from its receipt's events alone:
   * the pool's Withdrawn for that nullifier hash (what left the pool, the change note it inserted) and the token's
   * Transfer out of the pool that paid it, which the pool emits right before (PrivacyPool._payRecipient). Null when
   * the transaction is unknown, pending, reverted, or paid no such note (a batch skips a note spent before it was
   * mined). Whoever sent it and through whatever contract: a copy of a relay's calldata, sent straight to the
   * entrypoint or through another contract, did what the relay would have.
   */
  async withdrawalEffect(txHash: string, nullifierHash: bigint): Promise<WithdrawalEffect | null> {
    const receipt = await this.call(() => this.provider.getTransactionReceipt(txHash));
    if (receipt === null || receipt.status !== 1) return null;
    const { privacyPool, usdc } = this.deployment;
    const withdrawn = this.pool.getEvent("Withdrawn").fragment;
    const transfer = TOKEN_EVENTS.getEvent("Transfer")!;
    const at = receipt.logs.findIndex(
      (log) =>
        sameAddress(log.address, privacyPool) &&
        log.topics[0] === withdrawn.topicHash &&
        BigInt(this.pool.interface.decodeEventLog(withdrawn, log.data, log.topics).spentNullifierHash) === nullifierHash,
    );
    if (at < 0) return null;
    const spent = this.pool.interface.decodeEventLog(withdrawn, receipt.logs[at]!.data, receipt.logs[at]!.topics);
    const effect = { txHash, withdrawnValue: BigInt(spent.withdrawnValue), newCommitment: BigInt(spent.newCommitment) };
    // The pool pays its recipient right before it says Withdrawn; a payout it keeps (a pool authorization) has no transfer.
    const payment = receipt.logs[at - 1];
    if (payment === undefined || !sameAddress(payment.address, usdc) || payment.topics[0] !== transfer.topicHash) {
      return { ...effect, recipient: getAddress(privacyPool), paid: null };
    }
    const paid = TOKEN_EVENTS.decodeEventLog(transfer, payment.data, payment.topics);
    if (!sameAddress(paid.from as string, privacyPool)) return null;
    return { ...effect, recipient: getAddress(paid.to as string), paid: BigInt(paid.value) };
  }

  /** Whether the node knows `txHash` at all (mined or pending); false for a dropped transaction. */
  async knowsTransaction(txHash: string): Promise<boolean> {
    return (await this.call(() => this.provider.getTransaction(txHash))) !== null;
  }

  /** Runs a chain call, turning reverts and RPC failures into RelayerErrors. */
  async call<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw this.explain(error);
    }
  }

  private explain(error: unknown): RelayerError {
    if (error instanceof RelayerError) return error;
    if (isError(error, "CALL_EXCEPTION") && error.data) {
      const name = this.revertName(error.data);
      if (name !== undefined) {
        return REVERT_MEANINGS[name] ?? new RelayerError("INVALID_PROOF", `The pool rejected the withdrawal: ${name}.`);
      }
    }
    if (
      isError(error, "NETWORK_ERROR") ||
      isError(error, "TIMEOUT") ||
      isError(error, "SERVER_ERROR") ||
      isConnectionFailure(error) ||
      isJsonRpcErrorAnswer(error)
    ) {
      return new RelayerError("CHAIN_UNAVAILABLE", "The chain RPC is unavailable; nothing was spent. Retry later.", {}, undefined, 5);
    }
    const reason = (error as { shortMessage?: string; message?: string } | undefined)?.shortMessage ?? "unknown";
    return new RelayerError("INTERNAL", `unexpected chain error (${reason})`);
  }

  private revertName(data: string): string | undefined {
    for (const contractInterface of [this.entrypoint.interface, this.pool.interface]) {
      const parsed = contractInterface.parseError(data);
      if (parsed) return parsed.name;
    }
    return undefined;
  }
}

/** A relay whose transaction was mined and reverted: the note may still be unspent, or spent by another transaction. */
export class RelayRevertedError extends RelayerError {
  constructor(readonly txHash: string) {
    super("INTERNAL", `relay transaction ${txHash} reverted`);
  }
}

/** What a mined transaction did for one note, as its receipt's events say (PoolChain.withdrawalEffect). */
export interface WithdrawalEffect {
  txHash: string;
  /** What left the pool for the note (Withdrawn). */
  withdrawnValue: bigint;
  /** The change note the spend inserted (Withdrawn). */
  newCommitment: bigint;
  /**
   * Whom the pool paid, and how much: the withdrawn value less the fee that accrued in the pool. The pool itself and
   * null when it kept the payout for the transfer a pool authorization authorizes (its spend record says which).
   */
  recipient: string;
  paid: bigint | null;
}

/** The token's events (an ERC-20's Transfer), from the generated TestUSDC binding: the same event as USDC's. */
const TOKEN_EVENTS = TestUSDC__factory.createInterface();

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** A relay a mined batch skipped: its note was spent by another transaction first; nothing of it left the pool. */
function skippedInBatch(batch: PromiseSettledResult<TransactionReceipt>): RelayerError {
  const txHash = batch.status === "fulfilled" ? batch.value.hash : "";
  return new RelayerError(
    "ALREADY_SPENT",
    `The note was spent by another transaction before the batch ${txHash} that carried this withdrawal was mined; the batch paid nothing for it. Use the change note of the spend that did.`,
  );
}

/** A relay broadcast (or about to be) whose outcome the chain did not tell; never "nothing was spent". */
export function uncertain(txHash: string, cause: unknown): RelayerError {
  const why =
    cause instanceof RelayerError && cause.code === "CHAIN_UNAVAILABLE"
      ? "the chain RPC stopped answering while it was pending"
      : cause instanceof Error && cause.message.startsWith("it was not mined within")
        ? cause.message
        : "the chain did not confirm it";
  return new RelayerError(
    "SETTLEMENT_UNCERTAIN",
    `The withdrawal ${txHash} was sent but its outcome is unknown (${why}). Treat the note as possibly spent and retry the same request: it resolves from the chain.`,
    { state: "uncertain", fundingTxHash: txHash },
    undefined,
    5,
  );
}

const CONNECTION_FAILURES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND"]);

/** A socket error of the RPC connection: ethers v6 rethrows Node's own error (code on it), older paths wrap it in `cause`. */
function isConnectionFailure(error: unknown): boolean {
  const own = (error as { code?: unknown } | undefined)?.code;
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  return CONNECTION_FAILURES.has(String(own)) || CONNECTION_FAILURES.has(String(cause));
}

/**
 * The node answered a JSON-RPC error that is not a revert (e.g. -32005 limit exceeded): ethers reports it on
 * eth_call as a CALL_EXCEPTION without revert data with the answer in `info.error`, on any other method
 * (eth_getBlockByNumber, eth_getTransactionCount...) as UNKNOWN_ERROR "could not coalesce error" with the answer
 * in `error`.
 */
function isJsonRpcErrorAnswer(error: unknown): boolean {
  if (!isError(error, "CALL_EXCEPTION") && !isError(error, "UNKNOWN_ERROR")) return false;
  if (isError(error, "CALL_EXCEPTION") && error.data) return false;
  type Answer = { code?: unknown; message?: unknown } | undefined;
  const { info, error: own } = error as { info?: { error?: Answer }; error?: Answer };
  const answer = info?.error ?? own;
  return typeof answer?.code === "number" && !/revert/i.test(String(answer.message));
}
