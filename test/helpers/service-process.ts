import { spawn } from "node:child_process";
import { EventEmitter, once } from "node:events";
import { createInterface } from "node:readline";

export interface ServiceProcess {
  /** Every line the process wrote, stdout and stderr. */
  readonly lines: string[];
  /**
   * Resolves with the first pino log line whose message is `match` (or, given fields, whose fields all equal
   * them), written so far or later.
   */
  logLine(match: string | Record<string, unknown>, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the exit code, or the signal that ended the process. */
  readonly exited: Promise<number | NodeJS.Signals | null>;
  /** SIGTERM, as an operator stops it; resolves as `exited`. */
  stop(): Promise<number | NodeJS.Signals | null>;
  /** Ends it at once by `signal` (SIGKILL: a crash, nothing of its own runs after); resolves as `exited`. */
  kill(signal?: NodeJS.Signals): Promise<number | NodeJS.Signals | null>;
}

function parseLog(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/**
 * Starts a service's entry point (`indexer/main.ts`, `relayer/main.ts`) as an operator would, with exactly `env`
 * (plus PATH) as its environment.
 */
export function spawnService(entry: string, args: string[], env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, ["--import", "tsx", entry, ...args], {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const newLine = new EventEmitter();
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on("line", (line) => {
      lines.push(line);
      newLine.emit("line", line);
    });
  }
  const exited = once(child, "exit").then(([code, signal]) => (code ?? signal) as number | NodeJS.Signals | null);

  return {
    lines,
    exited,
    logLine(match, timeoutMs = 60_000) {
      const fields = typeof match === "string" ? { msg: match } : match;
      const matches = (line: string) => {
        const parsed = parseLog(line);
        return parsed !== undefined && Object.entries(fields).every(([name, value]) => parsed[name] === value);
      };
      const written = lines.find(matches);
      if (written !== undefined) return Promise.resolve(parseLog(written)!);
      return new Promise((resolve, reject) => {
        const onLine = (line: string) => {
          if (!matches(line)) return;
          clearTimeout(timer);
          newLine.off("line", onLine);
          resolve(parseLog(line)!);
        };
        const timer = setTimeout(() => {
          newLine.off("line", onLine);
          reject(new Error(`no log line with ${JSON.stringify(fields)}:\n${lines.join("\n")}`));
        }, timeoutMs);
        newLine.on("line", onLine);
      });
    },
    stop() {
      child.kill("SIGTERM");
      return exited;
    },
    kill(signal = "SIGKILL") {
      child.kill(signal);
      return exited;
    },
  };
}
