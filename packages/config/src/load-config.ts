import { z } from "zod";

/** Thrown when the environment does not satisfy a service's config schema. */
export class ConfigError extends Error {
  constructor(readonly issues: readonly string[]) {
    super(`Invalid configuration:\n  - ${issues.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

/**
 * Parses `env` once against `schema`. Every failing variable is named in the
 * error, so a bad boot says exactly what to fix.
 */
export function loadConfig<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.output<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => {
    const name = issue.path.length > 0 ? issue.path.join(".") : "(environment)";
    return `${name}: ${issue.message}`;
  });
  throw new ConfigError(issues);
}
