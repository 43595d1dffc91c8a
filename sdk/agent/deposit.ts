import type { BytesLike, Provider, Signer } from "ethers";
import { assertNoteValue, createNote, precommitmentOf, type Note } from "../note/note.js";
import { ENTRYPOINT_ABI, ERC20_ABI } from "../contracts/abis.js";
import { connectContract } from "../contracts/typed-contract.js";
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

export interface DepositNotesOptions extends Omit<DepositNoteOptions, "value"> {
  /** Each note's atomic USDC, each at least MINIMUM_DEPOSIT: one deposit per value, at consecutive indexes. */
  values: readonly bigint[];
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
  const [deposited] = await depositNotes({ ...options, values: [options.value] });
  return deposited!;
}

/**
 * Deposits one note per value, at the seed's consecutive deposit indexes from `index` (default: the first unused),
 * so that recovery, which walks the indexes, finds every one: a wallet of several notes, whose payments can run at
 * once (each spends a note of its own). Each is an ordinary Entrypoint.deposit, with its own Deposited event
 * naming the signer and the value (docs/design.md 2, "A wallet of several notes"); one approval covers them all.
 * Refuses before sending anything what depositNote
 * refuses, for any of them. A deposit that fails leaves those before it made: the error names them, and
 * recoverNotes finds them.
 */
export async function depositNotes(options: DepositNotesOptions): Promise<DepositedNote[]> {
  const { signer, addressBook, values } = options;
  if (values.length === 0) throw new RangeError("deposit at least one note");
  for (const value of values) {
    if (value < MINIMUM_DEPOSIT) {
      throw new DepositError("DEPOSIT_BELOW_MINIMUM", `deposit of ${value} atomic USDC is below the pool's minimum of ${MINIMUM_DEPOSIT} (1 USDC); nothing was sent. Deposit at least ${MINIMUM_DEPOSIT}.`);
    }
    assertNoteValue(value);
  }
  const provider = signer.provider;
  if (provider === null) throw new Error("the signer must be connected to a provider");

  const keys = masterKeysOf(options.seed);
  const logs = await readPoolLogs(provider, addressBook, options);
  const first = options.index ?? firstUnusedIndex(logs, keys, addressBook.scope);
  const deposits = values.map((value, i) => {
    const index = first + i;
    const secrets = depositSecretsOf(keys, addressBook.scope, index);
    const precommitment = precommitmentOf(secrets);
    if (logs.depositsByPrecommitment.has(precommitment)) {
      throw new DepositError("DEPOSIT_INDEX_USED", `deposit index ${index} of this seed is already used; nothing was sent. Leave the index out to take the first unused one.`);
    }
    return { value, index, secrets, precommitment };
  });
  const total = values.reduce((sum, value) => sum + value, 0n);
  const approvalNonce = await checkFundsAndApprove(signer, addressBook, total);

  const entrypoint = connectContract(ENTRYPOINT_ABI, addressBook.entrypoint, signer);
  const made: DepositedNote[] = [];
  // Each nonce after the first transaction is named outright: a provider may still answer the count it cached before.
  let nonce = approvalNonce === undefined ? undefined : approvalNonce + 1;
  // One after another, each mined before the next is estimated: an insert's gas depends on its leaf index.
  for (const { value, index, secrets, precommitment } of deposits) {
    const receipt = await entrypoint
      .deposit(addressBook.usdc, value, precommitment, nonce === undefined ? {} : { nonce })
      .then((sent) => {
        nonce = sent.nonce + 1;
        return sent.wait();
      })
      .catch((error: unknown) => {
        if (made.length === 0) throw error;
        const before = made.map((done) => done.index).join(", ");
        throw new Error(`the deposit at index ${index} failed (${error instanceof Error ? error.message : String(error)}); deposit indexes ${before} were made, and recoverNotes finds them`);
      });
    if (receipt === null) throw new Error(`the deposit transaction at index ${index} was dropped`);
    const deposited = depositedIn(receipt, addressBook);
    const note = createNote(value, deposited.label, secrets);
    if (deposited.commitment !== note.commitment) {
      throw new Error(`deposit ${receipt.hash}: the pool's commitment differs from the note's`);
    }
    made.push({ note, index, txHash: receipt.hash });
  }
  return made;
}

/**
 * `total` atomic USDC cut into `count` notes of equal value (the remainder on the first): equal values say less of
 * which note paid what than a spread of sizes.
 */
export function equalValues(total: bigint, count: number): bigint[] {
  if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`count must be a positive integer, got ${count}`);
  const each = total / BigInt(count);
  return Array.from({ length: count }, (_, i) => (i === 0 ? each + (total - each * BigInt(count)) : each));
}

/**
 * Checks the balance, and approves the entrypoint for `value` unless it may already pull that much. Returns the
 * approval's nonce when it sent one.
 */
async function checkFundsAndApprove(signer: Signer, addressBook: PoolAddressBook, value: bigint): Promise<number | undefined> {
  const owner = await signer.getAddress();
  const usdc = connectContract(ERC20_ABI, addressBook.usdc, signer);
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
