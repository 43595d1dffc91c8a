import { dataSlice, getAddress, getBytes, keccak256, solidityPacked, toBeHex, zeroPadValue, type Provider } from "ethers";
import type { ArtifactManager } from "hardhat/types/artifacts";
import { DEFAULT_MAX_RELAY_FEE_BPS, DEFAULT_MINIMUM_DEPOSIT_AMOUNT } from "../../ignition/modules/Facilitator.js";
import type { AddressBook } from "../../lib/address-book.js";
import { SNARK_SCALAR_FIELD } from "../../sdk/crypto/field.js";
import { Entrypoint__factory } from "../../types/ethers-contracts/index.js";
import { describeProvingKey, productionShortfalls, verifierHashes } from "../circuits/key-trust.js";
import { readManifest } from "../circuits/manifest.js";
import { isProductionChain } from "../deploy/key-guard.js";
import { CIRCLE_USDC } from "../deploy/usdc.js";
import { loadCompiledContract, type CompiledContract } from "./compiled-contract.js";
import { definedRoles, replayRoleHolders } from "./role-holders.js";
import { deploymentFilledRanges, describeCode, filledValue, LIBRARY_SELF_ADDRESS, runtimeDifference } from "./runtime-code.js";

/** One line of the table: what was checked, what this checkout and the address book say, what the chain holds. */
export interface DeploymentCheck {
  check: string;
  expected: string;
  found: string;
  ok: boolean;
}

export interface VerifyDeploymentOptions {
  provider: Provider;
  book: AddressBook;
  /** This checkout's compiled contracts (hre.artifacts). */
  artifacts: ArtifactManager;
  /** Expected holders by role name, replacing the address book's for that role (a key rotated or added since). */
  roleHolders?: Record<string, string[]>;
  /** Blocks per eth_getLogs request when replaying role events. */
  maxBlockRange?: number;
}

/** An immutable's expected value as the 32-byte word in the runtime code, and how to show a word of its type. */
interface Expected {
  value: string;
  show: (word: string) => string;
}
const addressWord = (address: string): Expected => ({ value: zeroPadValue(address, 32).toLowerCase(), show: (word) => getAddress(dataSlice(word, 12)) });
const uintWord = (value: bigint): Expected => ({ value: toBeHex(value, 32), show: (word) => BigInt(word).toString() });

/** PrivacyPool's SCOPE: keccak256(pool, chain id, asset) mod the scalar field, as its constructor computes it. */
export function poolScope(pool: string, chainId: number, asset: string): bigint {
  return BigInt(keccak256(solidityPacked(["address", "uint256", "address"], [pool, chainId, asset]))) % SNARK_SCALAR_FIELD;
}

const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
const list = (addresses: string[]) => (addresses.length === 0 ? "nobody" : addresses.join(", "));

/**
 * Checks from the chain alone that the deployment of `book` is what this checkout deploys: each contract's runtime
 * bytecode is this checkout's compilation with this manifest's key (the manifest pins the inlined verifier, and on a
 * production chain the key must be a ceremony's; immutables and library addresses masked, then
 * each checked on its own, and each linked library's own code), USDC is Circle's where the chain has it, the pool
 * is registered with the deploy's fee parameters and the address book's access-fee treasury, and each role is held
 * by exactly the addresses the address book names (DEFAULT_ADMIN_ROLE the deployer, POSTMAN_ROLE the postman,
 * REFUNDER_ROLE the refunder, any other role nobody), replayed from the role events since the start block.
 */
export async function verifyDeployment({ provider, book, artifacts, roleHolders = {}, maxBlockRange = 2_000 }: VerifyDeploymentOptions): Promise<DeploymentCheck[]> {
  const checks: DeploymentCheck[] = [];
  const add = (check: string, expected: string, found: string, ok = expected === found) => checks.push({ check, expected, found, ok });

  const chainId = Number((await provider.getNetwork()).chainId);
  add("chain id", String(book.chainId), String(chainId));
  const circle = CIRCLE_USDC[chainId];
  const usdc = getAddress(circle ?? book.usdc);
  add(circle === undefined ? "USDC (the address book's, no Circle USDC on this chain id)" : "USDC (Circle's on this chain)", usdc, book.usdc, sameAddress(usdc, book.usdc));

  // The pool inlines the verifier, so its bytecode below carries the key; these say which key that is.
  const manifest = await readManifest();
  const verifier = await verifierHashes(manifest);
  add("WithdrawalVerifier.sol is the manifest's (SHA-256)", verifier.pinned ?? "not pinned", verifier.actual);
  const production = isProductionChain(chainId);
  const shortfalls = production ? productionShortfalls(manifest) : [];
  add(
    "proving key (circuits/artifacts/manifest.json)",
    production ? "a public phase 1, 3 contributions and a beacon (production chain)" : "any (not a production chain)",
    `${describeProvingKey(manifest)}${shortfalls.length > 0 ? ` (lacks: ${shortfalls.join("; ")})` : ""}`,
    shortfalls.length === 0,
  );

  const scope = poolScope(book.privacyPool, chainId, usdc);
  add("pool scope in the address book", scope.toString(), book.scope.toString());

  const immutables: Record<string, Record<string, Expected>> = {
    PrivacyPool: {
      ENTRYPOINT: addressWord(book.entrypoint),
      WITHDRAWAL_BATCH_VERIFIER: addressWord(book.batchVerifier),
      ASSET: addressWord(usdc),
      SCOPE: uintWord(scope),
    },
  };
  const libraries: Record<string, string> = book.poseidon;
  const linked = new Map<string, string>();

  const checkCode = async (contract: CompiledContract, address: string) => {
    const code = getBytes(await provider.getCode(address));
    const difference = runtimeDifference(contract, code);
    add(`${contract.name} bytecode at ${address}`, `as compiled here: ${describeCode(contract.code, deploymentFilledRanges(contract))}`, difference ?? "the same", difference === undefined);
    if (code.length !== contract.code.length) return undefined;
    for (const { name, ranges } of contract.immutables) {
      const expected = immutables[contract.name]?.[name];
      const found = filledValue(code, ranges);
      add(
        `${contract.name}.${name} (immutable)`,
        expected === undefined ? "no expected value (add one in scripts/verify-deployment/verify-deployment.ts)" : expected.show(expected.value),
        found === undefined ? "differs between its copies" : (expected?.show(found) ?? found),
        expected !== undefined && found === expected.value,
      );
    }
    for (const { library, ranges } of contract.links) {
      const expected = libraries[library];
      const found = filledValue(code, ranges);
      add(`${contract.name} links ${library}`, expected ?? "not in the address book", found === undefined ? "differs between its copies" : getAddress(found), expected !== undefined && found === expected.toLowerCase());
      if (found !== undefined) linked.set(library, getAddress(found));
    }
    return code;
  };

  for (const [name, address] of [["Entrypoint", book.entrypoint], ["PrivacyPool", book.privacyPool], ["WithdrawalBatchVerifier", book.batchVerifier]] as const) {
    await checkCode(await loadCompiledContract(artifacts, name), address);
  }
  for (const [library, address] of linked) {
    const code = await checkCode(await loadCompiledContract(artifacts, library), address);
    if (code !== undefined) add(`${library} call guard holds its own address`, address, getAddress(filledValue(code, [LIBRARY_SELF_ADDRESS])!));
  }

  const entrypoint = Entrypoint__factory.connect(book.entrypoint, provider);
  const read = async <T>(call: () => Promise<T>, show: (value: T) => string) =>
    call().then(show, (error: unknown) => `call failed: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`);
  const registered = await entrypoint.assetConfig(usdc).catch(() => undefined);
  add("pool registered for USDC", book.privacyPool, registered === undefined ? "call failed" : registered.pool, registered !== undefined && sameAddress(registered.pool, book.privacyPool));
  add("pool of the scope", book.privacyPool, await read(() => entrypoint.poolByScope(book.scope), String));
  add("minimum deposit (atomic USDC)", DEFAULT_MINIMUM_DEPOSIT_AMOUNT.toString(), registered?.minimumDepositAmount.toString() ?? "call failed");
  add("max relay fee (bps)", DEFAULT_MAX_RELAY_FEE_BPS.toString(), registered?.maxRelayFeeBPS.toString() ?? "call failed");
  add("access-fee treasury", book.accessFeeTreasury ?? "not in the address book", await read(() => entrypoint.accessFeeTreasury(), String));

  const abi = Entrypoint__factory.createInterface();
  const names = await definedRoles(abi, book.entrypoint, provider);
  const toBlock = await provider.getBlockNumber();
  const replayed = await replayRoleHolders(abi, book.entrypoint, provider, { fromBlock: book.startBlock, toBlock, maxRange: maxBlockRange });
  const named: Record<string, string[] | undefined> = {
    DEFAULT_ADMIN_ROLE: [book.deployer],
    POSTMAN_ROLE: [book.postman],
    REFUNDER_ROLE: book.refunder === undefined ? undefined : [book.refunder],
    ...roleHolders,
  };
  for (const name of Object.keys(roleHolders).filter((role) => ![...names.values()].includes(role))) {
    add(`role ${name}`, list(roleHolders[name]!), "the entrypoint defines no such role", false);
  }
  for (const role of new Set([...names.keys(), ...replayed.keys()])) {
    const name = names.get(role) ?? role;
    const expected = name in named ? named[name] : [];
    const found = replayed.get(role) ?? [];
    const strangers = found.filter((holder) => !expected?.some((address) => sameAddress(address, holder)));
    const missing = (expected ?? []).filter((address) => !found.some((holder) => sameAddress(address, holder)));
    // The events and the current state must agree: a start block after the deployment would miss grants.
    const disagreeing: string[] = [];
    for (const account of new Set([...found, ...(expected ?? []).map((address) => getAddress(address))])) {
      if ((await entrypoint.hasRole(role, account, { blockTag: toBlock })) !== found.includes(account)) disagreeing.push(account);
    }
    const notes = [
      ...(strangers.length > 0 ? [`not named: ${strangers.join(", ")}`] : []),
      ...(missing.length > 0 ? [`missing: ${missing.join(", ")}`] : []),
      ...(disagreeing.length > 0 ? [`hasRole disagrees with the events for ${disagreeing.join(", ")}: is the start block right?`] : []),
    ];
    add(
      `role ${name}`,
      expected === undefined ? "not in the address book (ROLE_HOLDERS names it)" : list(expected),
      `${list(found)}${notes.length > 0 ? ` (${notes.join("; ")})` : ""}`,
      expected !== undefined && notes.length === 0,
    );
  }
  return checks;
}

/** The checks as a table: check, expected, found, ok. */
export function formatChecks(checks: DeploymentCheck[]): string {
  const rows = [["check", "expected", "found", "ok"], ...checks.map((check) => [check.check, check.expected, check.found, check.ok ? "ok" : "MISMATCH"])];
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => (column < 3 ? cell.padEnd(widths[column]!) : cell)).join(" | ")).join("\n");
}
