import type { BytesLike, Provider, Signer } from "ethers";
import { assertNoteValue, createNote, precommitmentOf, type Note } from "../note/note.js";
import { Entrypoint__factory, TestUSDC__factory } from "../../types/ethers-contracts/index.js";
import {
  depositedIn,
  readPoolLogs,
  type PoolAddressBook,
  type PoolLogs,
  type ReadPoolLogsOptions,
} from "./pool-events.js";
import { DepositError } from "./errors.js";
import { depositSecretsOf, masterKeysOf, type MasterKeys } from "./seed.js";

export { DepositError, type DepositErrorCode } from "./errors.js";

/** The pool's minimum deposit: 1 USDC in atomic units. */
export const MINIMUM_DEPOSIT = 1_000_000n;

export interface DepositNoteOptions extends ReadPoolLogsOptions {
  /** Pays the deposit; must be connected to a provider. */
  signer: Signer;
  addressBook: PoolAddressBook;
  /** Atomic USDC, at least MINIMUM_DEPOSIT. */
  value: bigint;
  seed: BytesLike;
  /** Deposit index of the seed; default: the first index the seed has not used. */
  index?: number;
}

export interface DepositedNote {
  note: Note;
  /** The deposit index whose secrets the note holds. */
  index: number;
  txHash: string;
}

/**
 * Deposits `value` USDC from `signer` as the seed's deposit `index`: approves the entrypoint when its allowance
 * falls short, then calls Entrypoint.deposit; the note's label comes from the pool's Deposited event.
 * Refuses with a DepositError, before sending anything, a value below the minimum, a balance that cannot cover it,
 * and an index the seed already used (a second note with the same nullifier could never be spent once the first is). Not safe to
 * call concurrently for one seed: both calls may pick the same index.
 */
export async function depositNote(options: DepositNoteOptions): Promise<DepositedNote> {
  const { signer, addressBook, value } = options;
  if (value < MINIMUM_DEPOSIT) {
    throw new DepositError("DEPOSIT_BELOW_MINIMUM", `deposit of ${value} atomic USDC is below the pool's minimum of ${MINIMUM_DEPOSIT} (1 USDC); nothing was sent. Deposit at least ${MINIMUM_DEPOSIT}.`);
  }
  assertNoteValue(value);
  const provider = signer.provider;
  if (provider === null) throw new Error("the signer must be connected to a provider");

  const keys = masterKeysOf(options.seed);
  const logs = await readPoolLogs(provider, addressBook, options);
  const index = options.index ?? firstUnusedIndex(logs, keys, addressBook.scope);
  const secrets = depositSecretsOf(keys, addressBook.scope, index);
  const precommitment = precommitmentOf(secrets);
  if (logs.depositsByPrecommitment.has(precommitment)) {
    throw new DepositError("DEPOSIT_INDEX_USED", `deposit index ${index} of this seed is already used; nothing was sent. Leave the index out to take the first unused one.`);
  }
  const approvalNonce = await checkFundsAndApprove(signer, addressBook, value);

  const entrypoint = Entrypoint__factory.connect(addressBook.entrypoint, signer);
  // The next nonce is named outright: a provider may still answer the count it cached before the approval.
  const nonce = approvalNonce === undefined ? {} : { nonce: approvalNonce + 1 };
  const receipt = await (await entrypoint.deposit(addressBook.usdc, value, precommitment, nonce)).wait();
  if (receipt === null) throw new Error("the deposit transaction was dropped");
  const deposited = depositedIn(receipt, addressBook, provider);
  const note = createNote(value, deposited.label, secrets);
  if (deposited.commitment !== note.commitment) {
    throw new Error(`deposit ${receipt.hash}: the pool's commitment differs from the note's`);
  }
  return { note, index, txHash: receipt.hash };
}

/**
 * Checks the balance, and approves the entrypoint for `value` unless it may already pull that much. Returns the
 * approval's nonce when it sent one.
 */
async function checkFundsAndApprove(signer: Signer, addressBook: PoolAddressBook, value: bigint): Promise<number | undefined> {
  const owner = await signer.getAddress();
  // Only the ERC-20 functions of the binding are used, which Circle's USDC has too.
  const usdc = TestUSDC__factory.connect(addressBook.usdc, signer);
  const balance = await usdc.balanceOf(owner);
  if (balance < value) {
    throw new DepositError("DEPOSIT_ABOVE_BALANCE", `${owner} holds ${balance} atomic USDC, the deposit needs ${value}; nothing was sent. Fund ${owner} or deposit less.`);
  }
  if ((await usdc.allowance(owner, addressBook.entrypoint)) >= value) return undefined;
  const approval = await usdc.approve(addressBook.entrypoint, value);
  await approval.wait();
  return approval.nonce;
}

export interface NextDepositIndexOptions extends ReadPoolLogsOptions {
  provider: Provider;
  addressBook: PoolAddressBook;
  seed: BytesLike;
}

/** The first deposit index of the seed that has no Deposited event in the pool. */
export async function nextDepositIndex(options: NextDepositIndexOptions): Promise<number> {
  const { provider, addressBook, seed } = options;
  return firstUnusedIndex(await readPoolLogs(provider, addressBook, options), masterKeysOf(seed), addressBook.scope);
}

function firstUnusedIndex(logs: PoolLogs, keys: MasterKeys, scope: bigint): number {
  let index = 0;
  while (logs.depositsByPrecommitment.has(precommitmentOf(depositSecretsOf(keys, scope, index)))) index += 1;
  return index;
}
