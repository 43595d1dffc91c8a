import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { ConfigError } from "./env-config.js";
import { AddressSchema, FieldElementSchema } from "../sdk/schema/primitives.js";

/** deployments/<chainId>.json: what the relayer and indexer need to find the contracts of one chain. */
export const DEPLOYMENTS_DIR = fileURLToPath(new URL("../deployments/", import.meta.url));

export const AddressBookSchema = z
  .object({
    chainId: z.number().int().positive(),
    entrypoint: AddressSchema,
    privacyPool: AddressSchema,
    usdc: AddressSchema,
    batchVerifier: AddressSchema,
    poseidon: z.object({ PoseidonT2: AddressSchema, PoseidonT3: AddressSchema, PoseidonT4: AddressSchema }).strict(),
    /** The pool's SCOPE, a field element as a decimal string. */
    scope: FieldElementSchema,
    /** A block at or before the deployment: the indexer syncs the pool's events from here. */
    startBlock: z.number().int().nonnegative(),
    deployer: AddressSchema,
    postman: AddressSchema,
    /** Set at deploy (ACCESS_FEE_TREASURY); absent from books written before it was recorded. */
    accessFeeTreasury: AddressSchema.optional(),
    /**
     * Written by deployments of an earlier version of the contracts, whose entrypoint had a REFUNDER_ROLE: read so
     * that their books still open (their notes leave by ragequit); this version writes and checks none.
     */
    refunder: AddressSchema.optional(),
  })
  .strict();

export type AddressBook = z.infer<typeof AddressBookSchema>;

export function addressBookPath(chainId: number, dir = DEPLOYMENTS_DIR): string {
  return path.join(dir, `${chainId}.json`);
}

/** The address book of `chainId`, validated; undefined when the chain has none. */
export async function readAddressBook(chainId: number, dir = DEPLOYMENTS_DIR): Promise<AddressBook | undefined> {
  const text = await readFile(addressBookPath(chainId, dir), "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw error;
  });
  return text === undefined ? undefined : AddressBookSchema.parse(JSON.parse(text));
}

/** Writes the address book of its chain and returns the file's path. */
export async function writeAddressBook(book: AddressBook, dir = DEPLOYMENTS_DIR): Promise<string> {
  const file = addressBookPath(book.chainId, dir);
  await mkdir(dir, { recursive: true });
  await writeFile(file, `${JSON.stringify({ ...book, scope: book.scope.toString() }, null, 2)}\n`);
  return file;
}

/**
 * The address book a service uses for the RPC's chain: the file named by `variable` when set, else
 * deployments/<chainId>.json. Refuses to start (ConfigError naming `variable`) when there is none or it is
 * for another chain.
 */
export async function resolveAddressBook(chainId: number, file: string | undefined, variable: string): Promise<AddressBook> {
  const book = file === undefined ? await readAddressBook(chainId) : AddressBookSchema.parse(JSON.parse(await readFile(file, "utf8")));
  if (book === undefined) {
    throw new ConfigError([`Missing server config: ${variable} (no deployments/${chainId}.json for the RPC's chain ${chainId})`]);
  }
  if (book.chainId !== chainId) {
    throw new ConfigError([`Invalid server config: ${variable} is for chain ${book.chainId}, the RPC serves chain ${chainId}`]);
  }
  return book;
}
