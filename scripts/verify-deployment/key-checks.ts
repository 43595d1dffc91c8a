import { readFile } from "node:fs/promises";
import path from "node:path";
import { toBeHex, type Provider } from "ethers";
import { REPO_ROOT } from "../circuits/compile.js";
import { checkList, type DeploymentCheck } from "./deployment-check.js";

interface VerificationKeyJson {
  vk_alpha_1: string[];
  vk_beta_2: string[][];
  vk_delta_2: string[][];
  IC: string[][];
}

/**
 * The numbers that make a verification key its own, as the hex a verifier's code pushes them (leading zero bytes
 * dropped, as the compiler drops them): alpha, beta, delta and each IC point. Gamma is the generator in every key.
 */
function keyConstants(vkey: VerificationKeyJson): string[] {
  const coordinates = [vkey.vk_alpha_1.slice(0, 2), ...vkey.vk_beta_2.slice(0, 2), ...vkey.vk_delta_2.slice(0, 2), ...vkey.IC.map((point) => point.slice(0, 2))].flat();
  return coordinates.map((value) => toBeHex(BigInt(value)).slice(2));
}

/**
 * Whether each contract's code holds this checkout's verification key (`vkeyFile`): the pool inlines the verifier,
 * the batch verifier is generated from the key. Where it does not, the check says so in those words, so a pool
 * built with another key reads as that and not as a bytecode length.
 */
export async function checkKeyInCode(provider: Provider, vkeyFile: string, keyDescription: string, deployed: { name: string; address: string }[]): Promise<DeploymentCheck[]> {
  const { checks, add } = checkList();
  const constants = keyConstants(JSON.parse(await readFile(vkeyFile, "utf8")) as VerificationKeyJson);
  const name = path.relative(REPO_ROOT, vkeyFile);
  for (const { name: contract, address } of deployed) {
    const code = (await provider.getCode(address)).toLowerCase();
    const held = constants.filter((constant) => code.includes(constant)).length;
    add(
      `${contract} holds this checkout's proving key`,
      `all ${constants.length} constants of ${name} (${keyDescription})`,
      held === constants.length ? `all ${constants.length}` : `${held} of ${constants.length}: it was built with another proving key than this checkout's`,
      held === constants.length,
    );
  }
  return checks;
}
