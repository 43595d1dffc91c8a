import { dataSlice, getAddress, getBytes, hexlify, Interface, toBeHex, zeroPadValue, type Provider } from "ethers";
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

/** An immutable's 32-byte word as its public getter returns it; undefined where the contract has no such getter. */
async function immutableFromGetter(provider: Provider, contract: CompiledContract, address: string, name: string): Promise<string | undefined> {
  if (!contract.getters.has(name)) return undefined;
  const data = new Interface([`function ${name}()`]).encodeFunctionData(name);
  const word = await provider.call({ to: address, data }).catch(() => "0x");
  return word.length === 66 ? word.toLowerCase() : undefined;
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
  const linked = new Map<string, string | undefined>();

  const check = async (contract: CompiledContract, address: string) => {
    const code = getBytes(await provider.getCode(address));
    const difference = runtimeDifference(contract, code);
    add(`${contract.name} bytecode at ${address}`, `as compiled here: ${describeCode(contract.code, deploymentFilledRanges(contract))}`, difference ?? "the same", difference === undefined);
    // Code of another length (another key inlined, another compiler) hides where the values were written: the
    // immutables are read from their getters and each link is looked for as a PUSH20 of the expected address.
    const aligned = code.length === contract.code.length;
    for (const { name, ranges } of contract.immutables) {
      const expected = expectations.immutables[contract.name]?.[name];
      const found = aligned ? filledValue(code, ranges) : await immutableFromGetter(provider, contract, address, name);
      add(
        `${contract.name}.${name} (immutable${aligned ? "" : ", from its getter"})`,
        expected === undefined ? "no expected value (add one in scripts/verify-deployment/verify-deployment.ts)" : expected.show(expected.value),
        found === undefined ? (aligned ? "differs between its copies" : "no getter to read it from") : (expected?.show(found) ?? found),
        expected !== undefined && found === expected.value,
      );
    }
    for (const { library, ranges } of contract.links) {
      const expected = expectations.libraries[library];
      if (aligned) {
        const found = filledValue(code, ranges);
        add(`${contract.name} links ${library}`, expected ?? "not in the address book", found === undefined ? "differs between its copies" : getAddress(found), expected !== undefined && found === expected.toLowerCase());
        linked.set(library, found === undefined ? expected : getAddress(found));
      } else {
        const present = expected !== undefined && hexlify(code).includes(`73${expected.slice(2).toLowerCase()}`);
        add(`${contract.name} links ${library} (looked for in the code)`, expected ?? "not in the address book", present ? `${expected} is in the code` : "not in the code", present);
        linked.set(library, expected);
      }
    }
    return code;
  };

  for (const { name, address } of deployed) await check(await loadCompiledContract(artifacts, name), address);
  for (const [library, address] of linked) {
    if (address === undefined) continue;
    const code = await check(await loadCompiledContract(artifacts, library), address);
    if (code.length >= LIBRARY_SELF_ADDRESS.start + LIBRARY_SELF_ADDRESS.length) add(`${library} call guard holds its own address`, address, getAddress(filledValue(code, [LIBRARY_SELF_ADDRESS])!));
  }
  return checks;
}
