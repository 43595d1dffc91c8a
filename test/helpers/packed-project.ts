import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../..");

/** The environment of a developer's shell: this process's, less the variables npm set for this test run. */
export const developerEnv = (): NodeJS.ProcessEnv => Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("npm_")));

/** The version of a package the repository installs: a project outside it pins the same. */
export async function repositoryVersion(name: string): Promise<string> {
  return (JSON.parse(await readFile(path.join(ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
}

export interface PackedProject {
  /** An empty ESM project in the system's temporary folder, outside the repository, with the packages installed. */
  project: string;
  /** What `npm install` printed, the packages' install scripts included. */
  installLog: string;
  cleanup(): Promise<void>;
}

/** How the empty project is made and the packages installed. */
export interface ProjectSetup {
  /** false installs as `npm install --ignore-scripts` (npm 11's default for packages not allowed). Default true. */
  installScripts?: boolean;
  /** Shell commands that make the project's package.json, run in its empty folder (a guide's); default an ESM package.json. */
  init?: readonly string[];
  /** More `npm install` flags (a guide's, e.g. --save-exact). */
  installFlags?: readonly string[];
}

/**
 * Packs each of the repository's package folders with `npm pack` (their prepack compiles them) and installs the
 * tarballs and `fromRegistry` (name@version) into an empty project, as a developer outside the repository would.
 */
export async function installPackedProject(
  packages: readonly string[],
  fromRegistry: readonly string[],
  { installScripts = true, init, installFlags = [] }: ProjectSetup = {},
): Promise<PackedProject> {
  const packs = await mkdtemp(path.join(tmpdir(), "packs-"));
  const project = await mkdtemp(path.join(tmpdir(), "project-"));
  const cleanup = async () => {
    for (const dir of [packs, project]) await rm(dir, { recursive: true, force: true });
  };
  try {
    const env = { ...developerEnv(), npm_config_update_notifier: "false" };
    const tarballs: string[] = [];
    for (const [index, folder] of packages.entries()) {
      const destination = path.join(packs, String(index));
      await mkdir(destination);
      await run("npm", ["pack", "--pack-destination", destination], { cwd: path.join(ROOT, folder), env, maxBuffer: 1 << 24 });
      const packed = (await readdir(destination)).filter((file) => file.endsWith(".tgz"));
      if (packed.length !== 1) throw new Error(`npm pack of ${folder} left ${packed.length} tarballs`);
      tarballs.push(path.join(destination, packed[0]!));
    }
    if (init === undefined) await writeFile(path.join(project, "package.json"), `${JSON.stringify({ name: "project", private: true, type: "module" })}\n`);
    for (const command of init ?? []) await run("sh", ["-c", command], { cwd: project, env });
    const flags = ["--no-audit", "--no-fund", installScripts ? "--foreground-scripts" : "--ignore-scripts", ...installFlags];
    const installed = await run("npm", ["install", ...flags, ...tarballs, ...fromRegistry], { cwd: project, env, maxBuffer: 1 << 24 });
    return { project, installLog: installed.stdout + installed.stderr, cleanup };
  } catch (error) {
    await cleanup();
    throw error;
  }
}
