// npm ci refuses a lockfile that lacks any optional dependency of a locked package. EDR (Hardhat's runtime)
// lists one native package per platform, and registries that mirror only some platforms make `npm install`
// drop the others from the lockfile. This puts them back as os/cpu-restricted optional entries, which npm ci
// validates and then skips on other platforms. Run it after regenerating package-lock.json from scratch.
import { readFileSync, writeFileSync } from "node:fs";

const LOCKFILE = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(LOCKFILE, "utf8"));
const edr = lock.packages["node_modules/@nomicfoundation/edr"];
const platformOf = (name) => {
  const [, os, cpu] = name.match(/edr-(darwin|linux|win32)-(arm64|x64)/) ?? [];
  return { os: [os], cpu: [cpu] };
};

let added = 0;
for (const [name, version] of Object.entries(edr.optionalDependencies ?? {})) {
  const key = `node_modules/${name}`;
  if (lock.packages[key]) continue;
  lock.packages[key] = { version, dev: true, license: "MIT", optional: true, ...platformOf(name), engines: edr.engines };
  added++;
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : 1)));
writeFileSync(LOCKFILE, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} platform entries to package-lock.json`);
