import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { Logger } from "pino";
import { parseScreeningList, type ScreeningList } from "./screening-list.js";

export interface ListSource {
  /** The list's name in decisions and logs, e.g. "sanctions". */
  name: string;
  file: string;
}

/** Why a depositor is flagged: the first list, in source order, that names it. */
export interface ScreeningMatch {
  list: string;
  file: string;
  line: number;
  note: string | null;
}

/**
 * The screening lists the ASP curator checks depositors against (a sanctions list and a hack/mixer overlay),
 * read from operator-replaceable files and re-read while running.
 */
export class ScreeningLists {
  private lists: ScreeningList[] = [];
  private contentDigest = "";
  private lastFailure: string | null = null;

  constructor(
    private readonly sources: readonly ListSource[],
    private readonly logger: Logger,
  ) {}

  /** Reads every list; throws when one is missing or malformed, so the curator never starts unscreened. */
  async load(): Promise<void> {
    const texts = await this.readAll();
    this.install(texts, digestOf(this.sources, texts));
  }

  /**
   * Re-reads the files and installs them when their content changed. A missing or malformed file keeps the
   * lists in force (logged once per distinct failure). Returns whether the lists changed.
   */
  async reloadIfChanged(): Promise<boolean> {
    try {
      const texts = await this.readAll();
      const digest = digestOf(this.sources, texts);
      if (digest === this.contentDigest) return false;
      this.install(texts, digest);
      this.lastFailure = null;
      this.logger.info({ lists: this.summary(), digest }, "screening lists reloaded");
      return true;
    } catch (error) {
      const failure = String(error);
      if (failure !== this.lastFailure) {
        this.logger.error({ err: error }, "screening lists not reloaded; the previous lists stay in force");
      }
      this.lastFailure = failure;
      return false;
    }
  }

  /** SHA-256 (hex) of the lists in force: ties each decision to the exact lists it was made with. */
  get digest(): string {
    return this.contentDigest;
  }

  match(address: string): ScreeningMatch | null {
    for (const list of this.lists) {
      const entry = list.entries.get(address);
      if (entry !== undefined) return { list: list.name, file: list.file, ...entry };
    }
    return null;
  }

  summary(): Record<string, number> {
    return Object.fromEntries(this.lists.map((list) => [list.name, list.entries.size]));
  }

  private readAll(): Promise<string[]> {
    return Promise.all(this.sources.map((source) => readFile(source.file, "utf8")));
  }

  private install(texts: string[], digest: string): void {
    this.lists = this.sources.map((source, i) => parseScreeningList(source.name, source.file, texts[i]!));
    this.contentDigest = digest;
  }
}

/** The sanctions list and the overlay the config names, in that order (the first that names a depositor flags it). */
export function configuredScreeningLists(config: { sanctionsList: string; overlayList: string }, logger: Logger): ScreeningLists {
  return new ScreeningLists(
    [
      { name: "sanctions", file: config.sanctionsList },
      { name: "overlay", file: config.overlayList },
    ],
    logger,
  );
}

function digestOf(sources: readonly ListSource[], texts: string[]): string {
  const hash = createHash("sha256");
  sources.forEach((source, i) => hash.update(`${source.name}\n${texts[i]}\n`));
  return hash.digest("hex");
}
