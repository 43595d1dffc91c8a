import { execFileSync } from "node:child_process";
import path from "node:path";
import { expect } from "chai";
import { importCycles, importGraph } from "../../scripts/lint/import-graph.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const trackedSources = () =>
  execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "*.ts"], { cwd: ROOT, encoding: "utf8" })
    .split("\n")
    .filter((file) => file !== "")
    .map((file) => path.join(ROOT, file));

describe("imports", () => {
  it("form no cycle anywhere in the repository", () => {
    const cycles = importCycles(importGraph(trackedSources())).map((cycle) => cycle.map((file) => path.relative(ROOT, file)));
    expect(cycles).to.deep.equal([]);
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
