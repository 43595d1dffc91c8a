import { getAddress, isAddress } from "ethers";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The parts of JSON Schema (as z.toJSONSchema writes the OpenAPI request schemas) that the fuzzer reads. */
export interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  const?: Json;
  enum?: Json[];
  default?: Json;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
}

/** One break of a body: the value at `path` replaced, or removed. */
export interface BodyEdit {
  what: string;
  path: (string | number)[];
  replacement?: Json;
  remove?: true;
}

/** Deterministic PRNG (mulberry32): the same seed gives the same cases on every run, and no Math.random. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The first alternative of a union: the one examples are built from and breaks are made in. */
const resolved = (schema: JsonSchema): JsonSchema => schema.anyOf?.[0] ?? schema;

/**
 * A valid example of `schema`: a field the schema fixes (const) takes that value, any other field's value comes from
 * `validValues` by field name, else from the schema itself (enum, default, booleans, integers, nested objects). A
 * string field with no entry throws: a new field of a request needs a valid value in the test's table.
 */
export function exampleOf(schema: JsonSchema, validValues: Record<string, Json>, name = "body"): Json {
  const s = resolved(schema);
  // A field the schema fixes takes that value (an entry's scheme: "exact", or a tab's "batch-settlement").
  if (s.const !== undefined) return s.const;
  if (name in validValues) return validValues[name]!;
  if (s.enum !== undefined) return s.enum[0]!;
  if (s.default !== undefined) return s.default;
  switch (s.type) {
    case "object":
      return Object.fromEntries(Object.entries(s.properties ?? {}).map(([key, child]) => [key, exampleOf(child, validValues, key)]));
    case "array":
      return [exampleOf(s.items ?? {}, validValues, name)];
    case "boolean":
      return true;
    case "integer":
    case "number":
      return Math.max(1, s.minimum ?? 1);
    default:
      throw new Error(`no valid value for the request field "${name}": add one to the fuzz test's table of valid values`);
  }
}

/** `body` with `edit` applied; the body itself is left alone. */
export function applyEdit(body: Json, edit: BodyEdit): Json {
  if (edit.path.length === 0) return edit.replacement!;
  const copy = structuredClone(body);
  let parent = copy as Record<string | number, Json>;
  for (const key of edit.path.slice(0, -1)) parent = parent[key] as Record<string | number, Json>;
  const last = edit.path.at(-1)!;
  if (edit.remove) delete parent[last];
  // defineProperty, so that keys such as __proto__ become fields of the JSON rather than prototypes.
  else Object.defineProperty(parent, last, { value: edit.replacement, enumerable: true, writable: true, configurable: true });
  return copy;
}

/** Keys no request schema has; each is added to every object that refuses unknown keys. */
const EXTRA_KEYS = ["fuzzExtra", "__proto__", "constructor"];

/**
 * Breaks of `example` at every field and level of `schema`, one each: wrong types (null, numbers, booleans,
 * arrays for objects, deeply nested junk), missing required fields, extra fields, and malformed strings by what
 * the field holds (amounts, addresses, hex, network ids, patterned and bounded strings). Each is meant to be
 * invalid; the caller checks that the relayer answers every one with a 4xx.
 */
export function malformedEdits(schema: JsonSchema, example: Json, random: () => number): BodyEdit[] {
  return [
    { what: "body = {}", path: [], replacement: {} },
    ...editsAt(schema, example, [], false, random),
  ];
}

function* editsAt(schema: JsonSchema, value: Json, path: (string | number)[], required: boolean, random: () => number): Generator<BodyEdit> {
  const s = resolved(schema);
  const at = path.join(".") || "body";
  const replace = (replacement: Json, what = preview(replacement)): BodyEdit => ({ what: `${at} = ${what}`, path, replacement });

  for (const junk of wrongTypes(s, value, random)) yield replace(junk);
  if (required) yield { what: `${at} missing`, path, remove: true };

  if (s.type === "object" && isObject(value)) {
    if (s.additionalProperties === false) {
      for (const key of EXTRA_KEYS) yield { what: `${at} with an extra field ${key}`, path: [...path, key], replacement: "1" };
    }
    for (const [key, child] of Object.entries(s.properties ?? {})) {
      if (key in value) yield* editsAt(child, value[key]!, [...path, key], s.required?.includes(key) ?? false, random);
    }
  } else if (s.type === "array" && Array.isArray(value) && value.length > 0) {
    if (s.maxItems !== undefined) yield replace(Array<Json>(s.maxItems + 1).fill(value[0]!), `${s.maxItems + 1} items`);
    yield* editsAt(s.items ?? {}, value[0]!, [...path, 0], false, random);
  } else if (s.type === "string" && typeof value === "string") {
    for (const bad of malformedStrings(s, value, random)) yield replace(bad);
  } else if ((s.type === "integer" || s.type === "number") && typeof value === "number") {
    for (const bad of [0, -1, 1.5, 2 ** 53, 1e308].filter((n) => !numberFits(s, n))) yield replace(bad);
  }
}

/** Values of every JSON type but the field's own, plus random junk of other types. */
function wrongTypes(s: JsonSchema, value: Json, random: () => number): Json[] {
  const own = s.type === "integer" ? "number" : s.type;
  const candidates: Json[] = [
    null,
    true,
    0,
    -1,
    1.5,
    1e308,
    typeof value === "string" && /^[0-9]+$/.test(value) ? Number(value) : 42,
    "",
    "junk",
    [],
    {},
    [value],
    { value },
    nestedJunk(random, 64),
    randomJson(random, 3),
    randomJson(random, 3),
  ];
  return candidates.filter((candidate) => jsonType(candidate) !== own);
}

/** Strings the field must refuse, chosen by what its valid value looks like and by its schema's bounds. */
function malformedStrings(s: JsonSchema, value: string, random: () => number): string[] {
  const candidates: string[] = [];
  if (/^[0-9]+$/.test(value)) {
    const huge = ((1n << 256n) + 1n).toString();
    candidates.push("-1", "1.5", "0x10", "1e6", "", " ", ` ${value}`, `${value} `, `0${value}`, `+${value}`, "１２３", "NaN", "Infinity", "1_000", "1,000", huge, "9".repeat(1000));
  } else if (/^0x[0-9a-fA-F]{40}$/.test(value)) {
    candidates.push(value.slice(0, 20), `${value}00`, `${value.slice(0, -1)}g`, value.slice(2), `0X${value.slice(2)}`, wrongChecksum(value), `0x${"0".repeat(24)}${value.slice(2)}`, "", ` ${value}`);
  } else if (/^0x[0-9a-fA-F]*$/.test(value)) {
    candidates.push(`${value}0`, `${value.slice(0, -2)}zz`, value.slice(2), "0x", "");
  } else if (value.startsWith("eip155:")) {
    candidates.push("eip155:", "eip155:0", "eip155:-1", `${value} `, value.toUpperCase(), value.slice("eip155:".length), "eip155:0x7a69", "");
  }
  const bounded: string[] = [];
  if (s.minLength !== undefined && s.minLength > 0) bounded.push("");
  if (s.maxLength !== undefined) bounded.push("x".repeat(s.maxLength + 1));
  if (s.pattern !== undefined || s.const !== undefined || s.enum !== undefined) {
    bounded.push(`${value}!`, `!${value}`, "", value.toUpperCase(), randomString(random, 12), randomString(random, 40));
  }
  const fits = (candidate: string) =>
    (s.pattern === undefined || new RegExp(s.pattern, "u").test(candidate)) &&
    (s.const === undefined || candidate === s.const) &&
    (s.enum === undefined || s.enum.includes(candidate)) &&
    candidate.length >= (s.minLength ?? 0) &&
    candidate.length <= (s.maxLength ?? Infinity);
  return [...new Set([...candidates, ...bounded.filter((candidate) => !fits(candidate))])].filter((candidate) => candidate !== value);
}

/** The address with one letter's case flipped so that its EIP-55 checksum is wrong. */
function wrongChecksum(address: string): string {
  const checksummed = getAddress(address);
  for (let i = 2; i < checksummed.length; i++) {
    const char = checksummed[i]!;
    const flipped = char === char.toLowerCase() ? char.toUpperCase() : char.toLowerCase();
    if (flipped === char) continue;
    const candidate = checksummed.slice(0, i) + flipped + checksummed.slice(i + 1);
    if (!isAddress(candidate)) return candidate;
  }
  throw new Error(`${address} has no letter whose case breaks its checksum; use an address with letters`);
}

function numberFits(s: JsonSchema, n: number): boolean {
  return (
    (s.type !== "integer" || Number.isInteger(n)) &&
    (s.minimum === undefined || n >= s.minimum) &&
    (s.exclusiveMinimum === undefined || n > s.exclusiveMinimum) &&
    (s.maximum === undefined || n <= s.maximum)
  );
}

const isObject = (value: Json): value is { [key: string]: Json } => typeof value === "object" && value !== null && !Array.isArray(value);

function jsonType(value: Json): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** Arrays and objects nested `depth` deep. */
function nestedJunk(random: () => number, depth: number): Json {
  let junk: Json = randomJson(random, 0);
  for (let level = 0; level < depth; level++) junk = random() < 0.5 ? [junk] : { [randomString(random, 3)]: junk };
  return junk;
}

function randomJson(random: () => number, depth: number): Json {
  const kind = Math.floor(random() * (depth > 0 ? 6 : 4));
  switch (kind) {
    case 0:
      return null;
    case 1:
      return random() < 0.5;
    case 2:
      return Math.floor(random() * 2 ** 40) * (random() < 0.5 ? -1 : 1);
    case 3:
      return randomString(random, 1 + Math.floor(random() * 16));
    case 4:
      return Array.from({ length: 1 + Math.floor(random() * 3) }, () => randomJson(random, depth - 1));
    default:
      return Object.fromEntries(Array.from({ length: 1 + Math.floor(random() * 3) }, () => [randomString(random, 4), randomJson(random, depth - 1)]));
  }
}

/** Letters, digits, JSON's own punctuation, control characters and characters outside ASCII. */
const ALPHABET = [..."abcXYZ019_-+.,:;'\"\\/{}[]<> \t\n\u0000\u007f\u00e9\u2028\u{1f4a5}"];

/** `length` characters of ALPHABET, drawn by `random`. */
export function randomString(random: () => number, length: number): string {
  return Array.from({ length }, () => ALPHABET[Math.floor(random() * ALPHABET.length)]!).join("");
}

/** A short JSON rendering of a value for a case's name. */
function preview(value: Json): string {
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
