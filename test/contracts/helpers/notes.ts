import type { Signer } from "ethers";
import {
  createLeanIMT,
  createNote,
  merkleWitness,
  precommitmentOf,
  statePathOf,
  type Note,
  type NoteSecrets,
  type StatePath,
} from "../../../sdk/index.js";
import { readStateLeaves } from "../../../sdk/agent/pool-events.js";
import type { PrivacyPool } from "../../../types/ethers-contracts/index.js";
import type { DeployedFacilitator } from "./fixtures.js";

/** Distinct deterministic secrets per test note. */
export const secretsFor = (tag: bigint): NoteSecrets => ({ nullifier: 1000n + tag, secret: 2000n + tag });

/** Mints `value` TestUSDC to `depositor` and approves the entrypoint to pull it. */
export async function fundDepositor(facilitator: DeployedFacilitator, depositor: Signer, value: bigint): Promise<void> {
  const { usdc, entrypoint } = facilitator;
  await usdc.mint(depositor, value);
  await usdc.connect(depositor).approve(entrypoint, value);
}

/** Deposits `value` from `depositor` as a note with `secrets`; the label comes from the pool's Deposited event. */
export async function depositNote(
  facilitator: DeployedFacilitator,
  depositor: Signer,
  value: bigint,
  secrets: NoteSecrets,
  /** `funded`: the depositor already holds and approved `value` (fundDepositor once for many notes). */
  { funded = false }: { funded?: boolean } = {},
): Promise<Note> {
  const { usdc, entrypoint, privacyPool } = facilitator;
  if (!funded) await fundDepositor(facilitator, depositor, value);
  const receipt = await (await entrypoint.connect(depositor).deposit(usdc, value, precommitmentOf(secrets))).wait();
  const deposited = receipt?.logs
    .map((log) => privacyPool.interface.parseLog(log))
    .find((event) => event?.name === "Deposited");
  if (!deposited) throw new Error("the deposit emitted no Deposited event");
  return createNote(value, deposited.args.label as bigint, secrets);
}

/** The path of `commitment` in the pool's current state tree, rebuilt from its LeafInserted events: what ragequit takes. */
export async function statePathFromChain(pool: PrivacyPool, commitment: bigint): Promise<StatePath> {
  const tree = createLeanIMT(await readStateLeaves(pool.runner!.provider!, { privacyPool: await pool.getAddress(), startBlock: 0 }));
  const index = tree.indexOf(commitment);
  if (index < 0) throw new Error(`commitment ${commitment} is no leaf of the pool's state tree`);
  return statePathOf(merkleWitness(tree, index), tree.size);
}

/** The original depositor takes `note` back, with its path in the pool's current state tree. */
export async function ragequitNote(pool: PrivacyPool, depositor: Signer, note: Note) {
  const path = await statePathFromChain(pool, note.commitment);
  return pool.connect(depositor).ragequit(note.value, note.label, note.nullifier, note.secret, path);
}

/**
 * A note of `value` the depositor deposited (its secrets `secretsFor(tag)`), its label approved in a fresh ASP root,
 * and the pool's state tree of it alone.
 */
export async function approvedNote(facilitator: DeployedFacilitator, value: bigint, tag = 1n) {
  const { entrypoint, accounts } = facilitator;
  const note = await depositNote(facilitator, accounts.depositor, value, secretsFor(tag));
  const aspTree = createLeanIMT([note.label]);
  await entrypoint.updateRoot(aspTree.root, aspTree.depth, "bafy-approved");
  return { note, aspTree, stateTree: createLeanIMT([note.commitment]) };
}
