import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { importCycles, importGraph, referencesLeaving } from "../../scripts/lint/import-graph.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const SDK = path.join(ROOT, "sdk");
const trackedSources = (...patterns: string[]) =>
  execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", ...(patterns.length > 0 ? patterns : ["*.ts"])], { cwd: ROOT, encoding: "utf8" })
    .split("\n")
    .filter((file) => file !== "")
    .map((file) => path.join(ROOT, file));

/** What the SDK's package may import: its dependencies and peer dependencies. */
function sdkDependencies(): Set<string> {
  const manifest = JSON.parse(readFileSync(path.join(SDK, "package.json"), "utf8")) as Record<string, Record<string, string> | undefined>;
  return new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
}

describe("imports", () => {
  it("form no cycle anywhere in the repository", () => {
    const cycles = importCycles(importGraph(trackedSources())).map((cycle) => cycle.map((file) => path.relative(ROOT, file)));
    expect(cycles).to.deep.equal([]);
  });

  it("keep sdk/ a package of its own: no file under it reaches outside it, or a package its package.json does not name", () => {
    const sources = trackedSources("sdk/*.ts", "sdk/*.mjs").map((file) => ({ file, text: readFileSync(file, "utf8") }));
    expect(sources.length).to.be.above(50);
    expect(referencesLeaving(SDK, sources, sdkDependencies())).to.deep.equal([]);
  });

  it("finds an sdk file that imports or reads a file outside sdk/, or an undeclared package", () => {
    const file = path.join(SDK, "agent", "example.ts");
    const text = [
      'import type { AddressBook } from "../../lib/address-book.js";',
      'import { note } from "../note/note.js";',
      'import express from "express";',
      'import { x402Client } from "@x402/core/client";',
      'import { readFile } from "node:fs/promises";',
      'const key = new URL("../../circuits/artifacts/withdraw.zkey", import.meta.url);',
      'const worker = new URL("../prover/proof-worker.js", import.meta.url);',
    ].join("\n");
    expect(referencesLeaving(SDK, [{ file, text }], new Set(["@x402/core"]))).to.deep.equal([
      'sdk/agent/example.ts: "../../lib/address-book.js" resolves outside sdk/',
      'sdk/agent/example.ts: "express" is no dependency of sdk/package.json',
      'sdk/agent/example.ts: "../../circuits/artifacts/withdraw.zkey" resolves outside sdk/',
    ]);
  });

  it("finds a cycle when there is one", () => {
    const graph = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
      ["d", ["a"]],
    ]);
    expect(importCycles(graph)).to.deep.equal([["a", "b", "c"]]);
  });
});
