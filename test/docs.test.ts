import { expect } from "chai";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { renderApiReference, withGenerated } from "../scripts/docs/api-reference.js";

/** The folders whose files may cite documentation: everything of the project but dependencies and build output. */
const SOURCE_DIRS = ["README.md", "docs", "relayer", "indexer", "sdk", "x402-peers", "mcp", "scripts", "lib", "contracts", "circuits", "ignition", "bench", "test"];
const SOURCE_FILE = /\.(ts|md|sol|circom|json)$/;
const THIS_FILE = path.join("test", "docs.test.ts");

async function filesUnder(entry: string): Promise<string[]> {
  const stat = await readdir(entry, { withFileTypes: true }).catch(() => undefined);
  if (stat === undefined) return SOURCE_FILE.test(entry) ? [entry] : [];
  const nested = await Promise.all(
    stat
      .filter((dirent) => !["node_modules", "artifacts", "results", "build", "dist", "deployments"].includes(dirent.name))
      .map((dirent) => (dirent.isDirectory() ? filesUnder(path.join(entry, dirent.name)) : Promise.resolve(SOURCE_FILE.test(dirent.name) ? [path.join(entry, dirent.name)] : []))),
  );
  return nested.flat();
}

async function sources(): Promise<{ file: string; text: string }[]> {
  const files = (await Promise.all(SOURCE_DIRS.map(filesUnder))).flat().filter((file) => file !== THIS_FILE);
  return Promise.all(files.map(async (file) => ({ file, text: await readFile(file, "utf8") })));
}

/** `file:line: text` of every line matching `pattern`. */
function hits(all: { file: string; text: string }[], pattern: RegExp): string[] {
  return all.flatMap(({ file, text }) =>
    text.split("\n").flatMap((line, index) => (pattern.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : [])),
  );
}

describe("docs: the project stands alone", function () {
  it("docs/api.md's reference is what `npm run docs:api` generates from the served OpenAPI document", async function () {
    const doc = await readFile("docs/api.md", "utf8");
    expect(withGenerated(doc, renderApiReference()) === doc, "docs/api.md is stale: run `npm run docs:api`").to.equal(true);
  });

  it("cites no file outside the repository", async function () {
    expect(hits(await sources(), /shared\/|DESIGN\.md|facilitator-interface/)).to.deep.equal([]);
  });

  it("cites the interface and the design by this project's docs, never an outside spec", async function () {
    expect(hits(await sources(), /\b[Ss]pec (section )?[0-9]/)).to.deep.equal([]);
  });

  it("cites only sections that docs/api.md and docs/design.md have", async function () {
    const headings = async (doc: string) =>
      new Set([...(await readFile(doc, "utf8")).matchAll(/^#{2,3} ([0-9]+(?:\.[0-9]+)?)\.? /gm)].map((match) => match[1]));
    const sections = { "docs/api.md": await headings("docs/api.md"), "docs/design.md": await headings("docs/design.md") };
    const citation = /(docs\/(?:api|design)\.md),? (?:sections? )?([0-9]+(?:\.[0-9]+)?)/g;
    const missing = (await sources()).flatMap(({ file, text }) =>
      [...text.matchAll(citation)]
        .filter((match) => !sections[match[1] as keyof typeof sections].has(match[2]!))
        .map((match) => `${file}: ${match[0]}`),
    );
    expect(missing).to.deep.equal([]);
  });

  it("links only to files that exist, from the README and docs/", async function () {
    const docs = [...(await filesUnder("docs")).filter((file) => file.endsWith(".md")), "README.md"];
    const broken: string[] = [];
    for (const doc of docs) {
      for (const [, target] of (await readFile(doc, "utf8")).matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const resolved = path.join(path.dirname(doc), target!);
        if ((await readFile(resolved).catch(() => readdir(resolved).catch(() => undefined))) === undefined) broken.push(`${doc}: ${target}`);
      }
    }
    expect(broken).to.deep.equal([]);
  });
});
