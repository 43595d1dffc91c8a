// Rewrites the generated part of docs/api.md (the endpoint reference) from relayer/http/openapi.ts: npm run docs:api.
// test/docs.test.ts fails while docs/api.md differs from what this writes.
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { renderApiReference, withGenerated } from "./api-reference.js";

const API_DOC = fileURLToPath(new URL("../../docs/api.md", import.meta.url));

const current = await readFile(API_DOC, "utf8");
const next = withGenerated(current, renderApiReference());
await writeFile(API_DOC, next);
console.log(next === current ? "docs/api.md is up to date" : "docs/api.md rewritten");
