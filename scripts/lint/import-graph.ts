import { readFileSync } from "node:fs";
import { isBuiltin } from "node:module";
import path from "node:path";

/** Every relative module specifier of a TypeScript source: static, `import type`, re-exports and `import()`. */
const RELATIVE_IMPORT = /(?:\bfrom|\bimport)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g;

/** Each file's relative imports, resolved to the `.ts` files they name (absolute paths). */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = [...readFileSync(file, "utf8").matchAll(RELATIVE_IMPORT)]
      .map((match) => path.resolve(path.dirname(file), match[1]!).replace(/\.js$/, ".ts"))
      .filter((target) => known.has(target));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The files `entries` reach through their relative imports, the entries included (absolute paths, sorted). */
export function importClosure(entries: readonly string[]): string[] {
  const reached = new Set<string>();
  const visit = (file: string) => {
    if (reached.has(file)) return;
    reached.add(file);
    for (const match of readFileSync(file, "utf8").matchAll(RELATIVE_IMPORT)) visit(path.resolve(path.dirname(file), match[1]!).replace(/\.js$/, ".ts"));
  };
  for (const entry of entries) visit(entry);
  return [...reached].sort();
}

/** The import cycles of a graph: its strongly connected components of more than one file (Tarjan). */
export function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1) cycles.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return cycles;
}

/**
 * Every module a source names: static imports and re-exports, `import type`, side-effect imports, `import()`, and
 * the files it finds beside itself with `new URL(path, import.meta.url)`; not the words inside a string (`"from"`,
 * `"--import"`).
 */
const MODULE_REFERENCE = /(?<![-"'.])\b(?:from|import)\s*\(?\s*["']([^"']+)["']|\bnew URL\(\s*["']([^"']+)["']\s*,\s*import\.meta\.url/g;

/** The package a bare specifier names: `@scope/name` or `name`, without a subpath. */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return (specifier.startsWith("@") ? parts.slice(0, 2) : parts.slice(0, 1)).join("/");
}

/**
 * What keeps a folder a package of its own: each reference of a source under `root` that leaves it, a relative path
 * that resolves outside `root` or a package that is not among `dependencies` (Node's built-ins aside), as
 * `file: "specifier" why`, `file` relative to `root`'s parent.
 */
export function referencesLeaving(root: string, sources: readonly { file: string; text: string }[], dependencies: ReadonlySet<string>): string[] {
  const found: string[] = [];
  for (const { file, text } of sources) {
    for (const match of text.matchAll(MODULE_REFERENCE)) {
      const specifier = (match[1] ?? match[2])!;
      const where = `${path.relative(path.dirname(root), file)}: "${specifier}"`;
      if (specifier.startsWith(".")) {
        const target = path.resolve(path.dirname(file), specifier);
        if (path.relative(root, target).startsWith("..")) found.push(`${where} resolves outside ${path.basename(root)}/`);
      } else if (!isBuiltin(specifier) && !dependencies.has(packageOf(specifier))) {
        found.push(`${where} is no dependency of ${path.basename(root)}/package.json`);
      }
    }
  }
  return found;
}
