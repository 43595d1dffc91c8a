import { spawn } from "node:child_process";
import { once } from "node:events";

/**
 * Runs `command` to its end as an operator's shell would, in `cwd`, with `env` added to this process's environment and
 * `stdin` piped in: its exit code and everything it wrote, stdout and stderr interleaved.
 */
export async function runCommand(
  command: string,
  args: string[],
  options: { env?: Record<string, string>; stdin?: string; cwd?: string } = {},
): Promise<{ code: number | null; output: string }> {
  const child = spawn(command, args, { env: { ...process.env, ...options.env }, cwd: options.cwd, stdio: ["pipe", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  // A command that exits without reading its input (git check-ignore) closes the pipe first: EPIPE is no failure of
  // it, and its exit code says what happened. Unhandled, the error would abort the whole test run.
  child.stdin.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") output += `\n[stdin: ${error.message}]`;
  });
  child.stdin.end(options.stdin ?? "");
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, output };
}
