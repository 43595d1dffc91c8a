import { getAddress } from "ethers";

/** Where a listed address appears in its file, and the comment that explains the listing. */
export interface ListEntry {
  line: number;
  note: string | null;
}

/** One screening list: listed addresses (checksummed) and their entries. */
export interface ScreeningList {
  name: string;
  file: string;
  entries: ReadonlyMap<string, ListEntry>;
}

export class ScreeningListError extends Error {
  constructor(file: string, line: number, problem: string) {
    super(`${file}:${line}: ${problem}`);
    this.name = "ScreeningListError";
  }
}

/**
 * Parses the screening list format (docs/asp-curator.md): one EVM address per line, in any letter case; `#` starts
 * a comment; a comment after an address is kept as the listing's reason for the audit trail; blank lines are
 * ignored. A malformed line rejects the whole file, so a typo never silently unlists anyone.
 */
export function parseScreeningList(name: string, file: string, text: string): ScreeningList {
  const entries = new Map<string, ListEntry>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = i + 1;
    const hash = raw.indexOf("#");
    const address = (hash === -1 ? raw : raw.slice(0, hash)).trim();
    if (address === "") return;
    if (!/^0x[0-9a-fA-F]{40}$/.test(address)) {
      throw new ScreeningListError(file, line, `not an EVM address: "${address}"`);
    }
    const note = hash === -1 ? null : raw.slice(hash + 1).trim() || null;
    // Lower-casing first accepts lists whose mixed case is not an EIP-55 checksum.
    const checksummed = getAddress(address.toLowerCase());
    if (!entries.has(checksummed)) entries.set(checksummed, { line, note });
  });
  return { name, file, entries };
}
