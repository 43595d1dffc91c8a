import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import path from "node:path";
import type { LocalServer } from "../../../x402-peers/local-server.js";

/** The sellers' guide. */
export const GUIDE = "docs/accept-private-payments.md";
/** How the guide imports the plug-in: the seller package's server entry. */
const PLUG_IN_IMPORT = '"x402-privacy-seller/server"';

/** The guide's TypeScript blocks, in order: the @x402/express seller, then the @x402/hono one. */
export async function guideSellers(): Promise<string[]> {
  const guide = await readFile(GUIDE, "utf8");
  return [...guide.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}

/**
 * The guide's project setup, from its "Install" block: the commands that make the project (npm init, npm pkg), run
 * as written in an empty folder, and the flags of its `npm install` line. The packages it names come from the
 * registry at the versions the guide's table pairs, and the seller package from its tarball, until it is published.
 */
export async function guideProjectSetup(): Promise<{ init: string[]; installFlags: string[] }> {
  const guide = await readFile(GUIDE, "utf8");
  const block = /^## Install\n+```sh\n([\s\S]*?)^```$/m.exec(guide)?.[1];
  if (block === undefined) throw new Error(`${GUIDE} has no sh block under "## Install"`);
  const lines = block.split("\n").map((line) => line.replace(/\s+#.*$/, "").trim());
  const install = lines.find((line) => line.startsWith("npm install "));
  if (install === undefined) throw new Error(`${GUIDE}'s Install block has no npm install line`);
  return {
    init: lines.filter((line) => /^npm (init|pkg) /.test(line)),
    installFlags: install.split(/\s+/).filter((word) => word.startsWith("--")),
  };
}

/** The guide's TypeScript block under the heading `## <heading>` (the first one there). */
export async function guideBlockUnder(heading: string): Promise<string> {
  const guide = await readFile(GUIDE, "utf8");
  const section = guide.split(/^## /m).find((part) => part.startsWith(`${heading}\n`));
  const block = section === undefined ? undefined : /^```ts\n([\s\S]*?)^```$/m.exec(section)?.[1];
  if (block === undefined) throw new Error(`${GUIDE} has no ts block under "## ${heading}"`);
  return block;
}

/** The packages the guide's sections add with an inline `npm install --save-exact <name@version> ...`, each pinned. */
export async function guideAddedPackages(): Promise<string[]> {
  const guide = await readFile(GUIDE, "utf8");
  const added = [...guide.matchAll(/`npm install --save-exact ([^`]+)`/g)].flatMap((match) => match[1]!.trim().split(/\s+/));
  const unpinned = added.filter((spec) => !/^@?[^@]+@\d+\.\d+\.\d+$/.test(spec));
  if (unpinned.length > 0) throw new Error(`${GUIDE} adds packages without an exact version: ${unpinned.join(", ")}`);
  return [...new Set(added)];
}

async function freePort(): Promise<number> {
  const probe = createServer().listen(0, "127.0.0.1");
  await once(probe, "listening");
  const { port } = probe.address() as { port: number };
  probe.close();
  return port;
}

/** Runs a seller of the guide as written (runGuideProgram), checking that it imports the plug-in. */
export async function runGuideSeller(code: string, project: string, env: Record<string, string>): Promise<LocalServer> {
  if (!code.includes(PLUG_IN_IMPORT)) throw new Error(`the guide's seller no longer imports the plug-in from ${PLUG_IN_IMPORT}`);
  return runGuideProgram(code, project, env);
}

/**
 * Runs a program of the guide as written, saved as `file` in `project` (a folder whose node_modules holds its
 * packages), in a process of its own under tsx with `env` as its environment and PORT a free port; resolves once
 * `readyPath` answers.
 */
export async function runGuideProgram(
  code: string,
  project: string,
  env: Record<string, string>,
  { file = "seller.ts", readyPath = "/weather" }: { file?: string; readyPath?: string } = {},
): Promise<LocalServer> {
  await writeFile(path.join(project, file), code);
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), file], {
    cwd: project,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  for (const stream of [child.stdout, child.stderr]) stream.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, "exit");
  const url = `http://127.0.0.1:${port}`;
  const close = async () => {
    if (child.exitCode === null) {
      child.kill();
      await exited;
    }
  };
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) throw new Error(`the guide's ${file} exited ${child.exitCode}:\n${output}`);
    if (await fetch(`${url}${readyPath}`).then(() => true, () => false)) return { url, close };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await close();
  throw new Error(`the guide's ${file} did not answer in 20 s:\n${output}`);
}
