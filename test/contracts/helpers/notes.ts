import type { Signer } from "ethers";
import { createNote, precommitmentOf, type Note, type NoteSecrets } from "../../../sdk/index.js";
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
): Promise<Note> {
  const { usdc, entrypoint, privacyPool } = facilitator;
  await fundDepositor(facilitator, depositor, value);
  const receipt = await (await entrypoint.connect(depositor).deposit(usdc, value, precommitmentOf(secrets))).wait();
  const deposited = receipt?.logs
    .map((log) => privacyPool.interface.parseLog(log))
    .find((event) => event?.name === "Deposited");
  if (!deposited) throw new Error("the deposit emitted no Deposited event");
  return createNote(value, deposited.args.label as bigint, secrets);
}
