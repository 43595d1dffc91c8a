import { getAddress, getCreateAddress, keccak256, solidityPacked, TypedDataEncoder, type Provider } from "ethers";
import type { ArtifactManager } from "hardhat/types/artifacts";
import { DEFAULT_MAX_RELAY_FEE_BPS, DEFAULT_MINIMUM_DEPOSIT_AMOUNT } from "../../ignition/modules/Facilitator.js";
import type { AddressBook } from "../../lib/address-book.js";
import { SNARK_SCALAR_FIELD } from "../../sdk/crypto/field.js";
import { Entrypoint__factory, TestUSDC__factory } from "../../types/ethers-contracts/index.js";
import { artifactPaths, type ArtifactPaths } from "../circuits/export-artifacts.js";
import { assessProvingKey } from "../circuits/key-trust.js";
import { isProductionChain } from "../deploy/key-guard.js";
import { CIRCLE_USDC } from "../deploy/usdc.js";
import { addressWord, checkContractCode, uintWord } from "./code-checks.js";
import { checkList, sameAddress, type DeploymentCheck } from "./deployment-check.js";
import { checkKeyInCode } from "./key-checks.js";
import { checkRoles } from "./role-checks.js";
import { ChainHistoryError } from "./role-history.js";

export interface VerifyDeploymentOptions {
  provider: Provider;
  book: AddressBook;
  /** This checkout's compiled contracts (hre.artifacts). */
  artifacts: ArtifactManager;
  /** Expected holders by role name, replacing the address book's for that role (a key rotated or added since). */
  roleHolders?: Record<string, string[]>;
  /** Accounts known to have held a role before (a rotated-out key), by role name: their tenure is not flagged. */
  pastRoleHolders?: Record<string, string[]>;
  /** Blocks per eth_getLogs request when reading the entrypoint's history. */
  maxBlockRange?: number;
  /** Hears how reading the history goes (it can take many requests on a long-lived chain). */
  progress?: (line: string) => void;
  /** Where the proving key's files are: this checkout's sdk/artifacts and verifiers by default. */
  keyPaths?: ArtifactPaths;
  /** The public phase-1 file the key was made from (PHASE1_PTAU): a production chain's key passes only against it. */
  phase1File?: string;
}

/** PrivacyPool's SCOPE: keccak256(pool, chain id, asset) mod the scalar field, as its constructor computes it. */
export function poolScope(pool: string, chainId: number, asset: string): bigint {
  return BigInt(keccak256(solidityPacked(["address", "uint256", "address"], [pool, chainId, asset]))) % SNARK_SCALAR_FIELD;
}

/**
 * The standard EIP-712 domain separator of the token's name and version on this chain, and the token's own
 * DOMAIN_SEPARATOR(): a pool authorization's digest is the token's, and an `exact` seller's facilitator computes the
 * standard one, so a token where they differ could never pay a seller from the pool.
 */
async function usdcDomainSeparators(provider: Provider, usdc: string, chainId: number): Promise<[string, string]> {
  const token = TestUSDC__factory.connect(usdc, provider);
  const { name, version } = await token.eip712Domain().catch(async () => ({ name: await token.name(), version: await token.version() }));
  return [TypedDataEncoder.hashDomain({ name, version, chainId, verifyingContract: usdc }), await token.DOMAIN_SEPARATOR()];
}

const failure = (error: unknown) => `call failed: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`;

/**
 * Checks from the chain alone that the deployment of `book` is what this checkout deploys: each contract's runtime
 * bytecode is this checkout's compilation, the pool's with this checkout's key inlined (code-checks.ts, key-checks.ts),
 * and the tab payers' code, which the entrypoint deployed and clones, answers to that entrypoint alone;
 * the key's files agree and it is one the chain may run (scripts/circuits/key-trust.ts); USDC is Circle's where the chain has it; the pool is registered with the deploy's fee
 * parameters and the address book's access-fee treasury; USDC signs under the standard EIP-712 domain, the digest of
 * the pool's authorizations (docs/design.md 4); each role is held by exactly whom the address book names,
 * and nobody else ever held one, read from the entrypoint's whole history (role-checks.ts).
 */
export async function verifyDeployment({ provider, book, artifacts, roleHolders = {}, pastRoleHolders = {}, maxBlockRange = 2_000, progress, keyPaths = artifactPaths(), phase1File }: VerifyDeploymentOptions): Promise<DeploymentCheck[]> {
  const { checks, add } = checkList();

  const chainId = Number((await provider.getNetwork()).chainId);
  add("chain id", String(book.chainId), String(chainId));
  const circle = CIRCLE_USDC[chainId];
  const usdc = getAddress(circle ?? book.usdc);
  add(circle === undefined ? "USDC (the address book's, no Circle USDC on this chain id)" : "USDC (Circle's on this chain)", usdc, book.usdc, sameAddress(usdc, book.usdc));

  // The pool inlines the verifier, so its bytecode carries the key; these say which key that is, from its files.
  const key = await assessProvingKey(keyPaths, { publicPhase1File: phase1File });
  add("proving key files agree (zkey, transcript, verification key, both verifiers, manifest)", "nothing contradicts", key.inconsistencies.join("; ") || "nothing contradicts");
  const production = isProductionChain(chainId);
  add(
    "proving key (sdk/artifacts)",
    production ? "a public phase 1, 3 contributions, a beacon and a transcript (production chain)" : "any (not a production chain)",
    `${key.description}${production && key.lacks.length > 0 ? ` (lacks: ${key.lacks.join("; ")})` : ""}`,
    !production || key.lacks.length === 0,
  );

  const scope = poolScope(book.privacyPool, chainId, usdc);
  add("pool scope in the address book", scope.toString(), book.scope.toString());
  // The entrypoint's constructor deploys the code every tab's payer clones: its first creation (nonce 1).
  const tabPayer = getCreateAddress({ from: book.entrypoint, nonce: 1 });
  const deployed = [
    { name: "Entrypoint", address: book.entrypoint },
    { name: "PrivacyPool", address: book.privacyPool },
    { name: "WithdrawalBatchVerifier", address: book.batchVerifier },
    { name: "TabPayer", address: tabPayer },
  ];
  const immutables = {
    Entrypoint: { TAB_PAYER_IMPLEMENTATION: addressWord(tabPayer) },
    PrivacyPool: { ENTRYPOINT: addressWord(book.entrypoint), WITHDRAWAL_BATCH_VERIFIER: addressWord(book.batchVerifier), ASSET: addressWord(usdc), SCOPE: uintWord(scope) },
    TabPayer: { ENTRYPOINT: addressWord(book.entrypoint) },
  };
  checks.push(...(await checkKeyInCode(provider, keyPaths.vkey, key.description, deployed.slice(1, 3))));
  checks.push(...(await checkContractCode(provider, artifacts, deployed, { immutables, libraries: book.poseidon })));

  const entrypoint = Entrypoint__factory.connect(book.entrypoint, provider);
  const registered = await entrypoint.assetConfig(usdc).catch(failure);
  const field = (read: (config: Exclude<typeof registered, string>) => unknown) => (typeof registered === "string" ? registered : String(read(registered)));
  add("pool registered for USDC", book.privacyPool, field((config) => config.pool));
  add("pool of the scope", book.privacyPool, await entrypoint.poolByScope(book.scope).then(String, failure));
  add("minimum deposit (atomic USDC)", DEFAULT_MINIMUM_DEPOSIT_AMOUNT.toString(), field((config) => config.minimumDepositAmount));
  add("max relay fee (bps)", DEFAULT_MAX_RELAY_FEE_BPS.toString(), field((config) => config.maxRelayFeeBPS));
  add("access-fee treasury", book.accessFeeTreasury ?? "not in the address book", await entrypoint.accessFeeTreasury().then(String, failure));
  const [expected, found] = await usdcDomainSeparators(provider, usdc, chainId).catch((error: unknown) => ["the EIP-712 domain of its name and version", failure(error)]);
  add("USDC's DOMAIN_SEPARATOR (the pool's authorizations are made under it, sellers' facilitators check the standard one)", expected, found);

  const roles = await checkRoles(provider, book, { roleHolders, pastRoleHolders }, maxBlockRange, progress).catch((error: unknown) => {
    const hint = error instanceof ChainHistoryError ? "" : " (lower MAX_BLOCK_RANGE if the RPC caps eth_getLogs)";
    add("roles", "read from the entrypoint's events since its creation", `${failure(error)}${hint}`, false);
    return [];
  });
  checks.push(...roles);
  return checks;
}
