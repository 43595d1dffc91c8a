import type { Logger } from "snarkjs";

/** A line printer that prefixes each line with the seconds since it was made: `[tag   12s] ...`. */
export function stopwatchPrinter(tag: string): (line: string) => void {
  const started = Date.now();
  return (line) => console.log(`[${tag} ${((Date.now() - started) / 1000).toFixed(0).padStart(5)}s] ${line}`);
}

/**
 * snarkjs' logger for a long step: its info, warnings and errors as they come, and its progress lines (debug, one
 * per chunk of points) at most one every `intervalMs`, so a step of minutes shows life without flooding.
 */
export function progressLogger(say: (line: string) => void, intervalMs = 5_000): Logger {
  let last = 0;
  return {
    info: (msg) => say(`  ${msg}`),
    warn: (msg) => say(`  warning: ${msg}`),
    error: (msg) => say(`  error: ${msg}`),
    debug: (msg) => {
      if (Date.now() - last > intervalMs) {
        last = Date.now();
        say(`  ${msg}`);
      }
    },
  };
}
