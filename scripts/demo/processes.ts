import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { once } from "node:events";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";

/** A service started as its own process; its output goes to `<logDir>/<name>.log`. */
export interface ServiceProcess {
  name: string;
  logFile: string;
  pid: number;
  /** Resolves, once its log is complete, with how it exited ("code 1", "SIGTERM"). */
  exited: Promise<string>;
  stop(): Promise<void>;
}

const BIN_DIR = fileURLToPath(new URL("../../node_modules/.bin/", import.meta.url));

/**
 * Starts `command`, a binary of the project's node_modules/.bin (`hardhat`, `tsx`) or an absolute path, with `env` added to this
 * process's environment, its output in a log file. `onUnexpectedExit` hears of an exit before `stop()`.
 */
export function startService(
  name: string,
  command: string,
  args: string[],
  env: Record<string, string>,
  logDir: string,
  onUnexpectedExit: (service: ServiceProcess, how: string) => void = () => {},
): ServiceProcess {
  const logFile = path.join(logDir, `${name}.log`);
  const log = createWriteStream(logFile);
  const child: ChildProcess = spawn(path.resolve(BIN_DIR, command), args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  // Two streams into one file: neither may end it, the process's close does.
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  let stopping = false;
  const exited = once(child, "close").then(async ([code, signal]) => {
    log.end();
    await once(log, "finish").catch(() => undefined);
    return String(signal ?? `code ${code}`);
  });
  const service: ServiceProcess = {
    name,
    logFile,
    pid: child.pid ?? -1,
    exited,
    async stop() {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return void (await exited);
      child.kill("SIGTERM");
      const forced = sleep(10_000).then(() => child.kill("SIGKILL"));
      await Promise.race([exited, forced]);
      await exited;
    },
  };
  void exited.then((how) => {
    if (!stopping) onUnexpectedExit(service, how);
  });
  return service;
}

/** The last `count` lines of `file`, for an error message. */
export async function lastLines(file: string, count = 20): Promise<string> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text.trimEnd().split("\n").slice(-count).join("\n");
}

/** Why `service` is gone: how it exited and the end of its log. */
export async function exitReport(service: ServiceProcess, how: string): Promise<string> {
  return `${service.name} exited (${how}); last lines of ${service.logFile}:\n${await lastLines(service.logFile)}`;
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

/** As waitFor, but failing at once, with the end of its log, when `service` exits first. */
export async function waitForService(service: ServiceProcess, what: string, probe: () => Promise<boolean>, timeoutMs?: number): Promise<void> {
  let ready = false;
  const gone = service.exited.then(async (how) => {
    if (!ready) throw new Error(`${await exitReport(service, how)}\n(while waiting for ${what})`);
  });
  await Promise.race([waitFor(what, probe, timeoutMs), gone]);
  ready = true;
}

/** Whether `url` answers HTTP at all (any status). */
export const answers = (url: string, init?: RequestInit) => async () => {
  await fetch(url, { ...init, signal: AbortSignal.timeout(2_000) });
  return true;
};

/** Whether a JSON-RPC node answers at `rpcUrl`. */
export const answersJsonRpc = (rpcUrl: string) =>
  answers(rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}' });

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}
