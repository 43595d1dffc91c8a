import { waitFor } from "../../../scripts/demo/processes.js";
import { spawnService, type ServiceProcess } from "../../helpers/service-process.js";

/** `npm run stack` as an operator starts it, in a process of its own, and what it printed once it is up. */
export interface StackProcess {
  stack: ServiceProcess;
  /** The `  NAME=value` lines it prints for an agent, a seller or a second terminal. */
  printed: Record<string, string>;
  /** The folder of its logs and stack.json, as its `[logs]` line names it. */
  logDir: string | undefined;
}

/** Starts scripts/stack/main.ts with `env` and waits (up to 3 minutes) until it says it is up; stops it if it is not. */
export async function startStackProcess(env: Record<string, string>): Promise<StackProcess> {
  const stack = spawnService("scripts/stack/main.ts", [], env);
  await waitFor("the stack", async () => stack.lines.some((line) => line.includes("Ctrl-C stops everything")), 180_000).catch(async (error: Error) => {
    await stack.stop();
    throw new Error(`${error.message}:\n${stack.lines.join("\n")}`);
  });
  const printed = Object.fromEntries(stack.lines.flatMap((line) => {
    const variable = /^ {2}([A-Z0-9_]+)=(\S+)$/.exec(line);
    return variable === null ? [] : [[variable[1]!, variable[2]!]];
  }));
  const logDir = stack.lines.map((line) => /^\[logs\] +(\S+): <service>\.log/.exec(line)?.[1]).find((dir) => dir !== undefined);
  return { stack, printed, logDir };
}
