import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { importClosure, importCycles, importGraph, referencesLeaving } from "../../scripts/lint/import-graph.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const SDK = path.join(ROOT, "sdk");
const SELLER = path.join(ROOT, "seller");
const trackedSources = (...patterns: string[]) =>
  execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", ...(patterns.length > 0 ? patterns : ["*.ts"])], { cwd: ROOT, encoding: "utf8" })
    .split("\n")
    .filter((file) => file !== "")
    .map((file) => path.join(ROOT, file));

/** What a package of the repository may import: its dependencies and peer dependencies. */
function packageDependencies(folder: string): Set<string> {
  const manifest = JSON.parse(readFileSync(path.join(folder, "package.json"), "utf8")) as Record<string, Record<string, string> | undefined>;
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
    expect(referencesLeaving(SDK, sources, packageDependencies(SDK))).to.deep.equal([]);
  });

  it("keep the seller's package whole: its entries reach only the wire modules it compiles in (no prover, no key, no file read beside them) and the packages its package.json names", () => {
    const manifest = JSON.parse(readFileSync(path.join(SELLER, "package.json"), "utf8")) as { exports: Record<string, { default: string } | string> };
    // Each entry's source: ./dist/seller/server.js is seller/server.ts.
    const entries = Object.values(manifest.exports)
      .flatMap((target) => (typeof target === "string" ? [] : [target.default]))
      .map((built) => path.join(ROOT, built.replace(/^\.\/dist\//, "").replace(/\.js$/, ".ts")));
    expect(entries.map((entry) => path.relative(ROOT, entry))).to.deep.equal(["seller/server.ts", "seller/facilitator.ts", "seller/served-payments-sqlite.ts"]);
    const closure = importClosure(entries);
    const outside = closure.map((file) => path.relative(ROOT, file)).filter((file) => !file.startsWith("seller/"));
    expect(outside.filter((file) => !/^(sdk\/(circuit|crypto|x402)|lib|types\/ethers-contracts)\//.test(file)), "only wire modules, gas arithmetic and contract interfaces").to.deep.equal([]);
    const sources = closure.map((file) => ({ file, text: readFileSync(file, "utf8") }));
    expect(referencesLeaving(ROOT, sources, packageDependencies(SELLER))).to.deep.equal([]);
    expect(sources.filter(({ text }) => text.includes("import.meta.url")).map(({ file }) => path.relative(ROOT, file))).to.deep.equal([]);
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
