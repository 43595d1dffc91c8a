import { dataSlice, getAddress, getBytes, toBeHex, zeroPadValue, type Provider } from "ethers";
import type { ArtifactManager } from "hardhat/types/artifacts";
import { loadCompiledContract, type CompiledContract } from "./compiled-contract.js";
import { checkList, type DeploymentCheck } from "./deployment-check.js";
import { deploymentFilledRanges, describeCode, filledValue, LIBRARY_SELF_ADDRESS, runtimeDifference } from "./runtime-code.js";

/** An immutable's expected value as the 32-byte word in the runtime code, and how to show a word of its type. */
export interface ExpectedWord {
  value: string;
  show: (word: string) => string;
}
export const addressWord = (address: string): ExpectedWord => ({ value: zeroPadValue(address, 32).toLowerCase(), show: (word) => getAddress(dataSlice(word, 12)) });
export const uintWord = (value: bigint): ExpectedWord => ({ value: toBeHex(value, 32), show: (word) => BigInt(word).toString() });

export interface CodeExpectations {
  /** By contract name, then immutable name. An immutable without one fails: someone must say what it should hold. */
  immutables: Record<string, Record<string, ExpectedWord>>;
  /** Library addresses by library name. */
  libraries: Record<string, string>;
}

/**
 * Checks the runtime code at each address against this checkout's compilation of the named contract, then each
 * immutable and library link on its own, then the code of every library the contracts link (and that its call
 * guard holds its own address).
 */
export async function checkContractCode(
  provider: Provider,
  artifacts: ArtifactManager,
  deployed: { name: string; address: string }[],
  expectations: CodeExpectations,
): Promise<DeploymentCheck[]> {
  const { checks, add } = checkList();
  const linked = new Map<string, string>();

  const check = async (contract: CompiledContract, address: string) => {
    const code = getBytes(await provider.getCode(address));
    const difference = runtimeDifference(contract, code);
    add(`${contract.name} bytecode at ${address}`, `as compiled here: ${describeCode(contract.code, deploymentFilledRanges(contract))}`, difference ?? "the same", difference === undefined);
    if (code.length !== contract.code.length) return undefined;
    for (const { name, ranges } of contract.immutables) {
      const expected = expectations.immutables[contract.name]?.[name];
      const found = filledValue(code, ranges);
      add(
        `${contract.name}.${name} (immutable)`,
        expected === undefined ? "no expected value (add one in scripts/verify-deployment/verify-deployment.ts)" : expected.show(expected.value),
        found === undefined ? "differs between its copies" : (expected?.show(found) ?? found),
        expected !== undefined && found === expected.value,
      );
    }
    for (const { library, ranges } of contract.links) {
      const expected = expectations.libraries[library];
      const found = filledValue(code, ranges);
      add(`${contract.name} links ${library}`, expected ?? "not in the address book", found === undefined ? "differs between its copies" : getAddress(found), expected !== undefined && found === expected.toLowerCase());
      if (found !== undefined) linked.set(library, getAddress(found));
    }
    return code;
  };

  for (const { name, address } of deployed) await check(await loadCompiledContract(artifacts, name), address);
  for (const [library, address] of linked) {
    const code = await check(await loadCompiledContract(artifacts, library), address);
    if (code !== undefined) add(`${library} call guard holds its own address`, address, getAddress(filledValue(code, [LIBRARY_SELF_ADDRESS])!));
  }
  return checks;
}
