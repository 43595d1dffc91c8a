import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { once } from "node:events";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";

/** A service the demo started as its own process; its output goes to `<logDir>/<name>.log`. */
export interface ServiceProcess {
  name: string;
  logFile: string;
  stop(): Promise<void>;
}

const BIN_DIR = fileURLToPath(new URL("../../node_modules/.bin/", import.meta.url));

/**
 * Starts `command`, a binary of the project's node_modules/.bin (`hardhat`, `tsx`), with `env` added to the
 * demo's own environment, its output in a log file. A process that exits before `stop()` fails the demo.
 */
export function startService(name: string, command: string, args: string[], env: Record<string, string>, logDir: string): ServiceProcess {
  const logFile = path.join(logDir, `${name}.log`);
  const log = createWriteStream(logFile);
  const child: ChildProcess = spawn(path.join(BIN_DIR, command), args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  let stopping = false;
  child.once("exit", (code, signal) => {
    if (!stopping) {
      console.error(`[${name}] exited unexpectedly (${signal ?? `code ${code}`}); see ${logFile}`);
      process.exitCode = 1;
    }
  });
  return {
    name,
    logFile,
    async stop() {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const exited = once(child, "exit");
      const forced = sleep(10_000).then(() => child.kill("SIGKILL"));
      await Promise.race([exited, forced]);
    },
  };
}

/** Polls `probe` every half second until it resolves true, failing after `timeoutMs` with `what` in the message. */
export async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

/** Whether `url` answers HTTP at all (any status). */
export const answers = (url: string, init?: RequestInit) => async () => {
  await fetch(url, { ...init, signal: AbortSignal.timeout(2_000) });
  return true;
};

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}
