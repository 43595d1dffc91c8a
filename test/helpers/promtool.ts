import { spawnSync } from "node:child_process";

/** Whether promtool (Debian's `prometheus` package) is on the PATH: the tests that need it skip without it. */
export const hasPromtool = (): boolean => spawnSync("promtool", ["--version"]).error === undefined;

/** Runs promtool with `input` on its stdin; a failure throws with everything it printed. */
export function promtool(args: string[], input?: string): string {
  const run = spawnSync("promtool", args, { encoding: "utf8", input });
  if (run.status !== 0) throw new Error(`promtool ${args.join(" ")} failed:\n${run.stdout}${run.stderr}`);
  return run.stdout;
}
