import type { z } from "zod";

/** Refusal to start: names every missing or invalid key by its environment variable. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join("\n"));
    this.name = "ConfigError";
  }
}

/**
 * Reads the variables of `envNames` (config key -> environment variable) from `env` and validates them once
 * with `schema`. Every problem is reported at once, as docs/api.md section 7's "Missing server config: <VARIABLE>" or
 * "Invalid server config: <VARIABLE> <why>".
 */
export function loadEnvConfig<S extends z.ZodType>(
  envNames: Readonly<Record<string, string>>,
  schema: S,
  env: NodeJS.ProcessEnv,
): z.output<S> {
  const raw = Object.fromEntries(
    Object.entries(envNames)
      .map(([key, variable]) => [key, env[variable]] as const)
      .filter(([, value]) => value !== undefined && value !== ""),
  );
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  throw new ConfigError(
    parsed.error.issues.map((issue) => {
      const key = String(issue.path[0]);
      const variable = envNames[key] ?? key;
      return raw[key] === undefined ? `Missing server config: ${variable}` : `Invalid server config: ${variable} ${issue.message}`;
    }),
  );
}
