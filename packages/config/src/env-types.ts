import { z } from "zod";

// Env values arrive as strings (or undefined). These helpers turn them into
// typed values and reject anything ambiguous: "yes" is not a boolean here.

const TRUE = new Set(["true", "1"]);
const FALSE = new Set(["false", "0"]);

/** Boolean env var: `true`/`1` or `false`/`0`, case-insensitive; empty or unset gives `fallback`. */
export function envBool(fallback: boolean) {
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === "") return fallback;
      const v = value.trim().toLowerCase();
      if (TRUE.has(v)) return true;
      if (FALSE.has(v)) return false;
      ctx.addIssue({ code: "custom", message: `expected true or false, got "${value}"` });
      return z.NEVER;
    });
}

/** Optional boolean: undefined when unset, so a caller can pick a mode-dependent default. */
export function envOptionalBool() {
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === "") return undefined;
      const v = value.trim().toLowerCase();
      if (TRUE.has(v)) return true;
      if (FALSE.has(v)) return false;
      ctx.addIssue({ code: "custom", message: `expected true or false, got "${value}"` });
      return z.NEVER;
    });
}

/** Integer env var within [min, max]; empty or unset gives `fallback`. */
export function envInt(fallback: number, min: number, max: number) {
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === "") return fallback;
      if (!/^-?\d+$/.test(value.trim())) {
        ctx.addIssue({ code: "custom", message: `expected an integer, got "${value}"` });
        return z.NEVER;
      }
      const n = Number(value.trim());
      if (n < min || n > max) {
        ctx.addIssue({ code: "custom", message: `must be between ${min} and ${max}, got ${n}` });
        return z.NEVER;
      }
      return n;
    });
}

/** Optional integer within [min, max]; undefined when unset. */
export function envOptionalInt(min: number, max: number) {
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === "") return undefined;
      if (!/^-?\d+$/.test(value.trim())) {
        ctx.addIssue({ code: "custom", message: `expected an integer, got "${value}"` });
        return z.NEVER;
      }
      const n = Number(value.trim());
      if (n < min || n > max) {
        ctx.addIssue({ code: "custom", message: `must be between ${min} and ${max}, got ${n}` });
        return z.NEVER;
      }
      return n;
    });
}

/** String env var; empty or unset gives `fallback`. */
export function envString(fallback: string) {
  return z
    .string()
    .optional()
    .transform((value) => (value === undefined || value.trim() === "" ? fallback : value.trim()));
}

/** Optional string: undefined when unset or empty. */
export function envOptionalString() {
  return z
    .string()
    .optional()
    .transform((value) => (value === undefined || value.trim() === "" ? undefined : value.trim()));
}

/** Comma-separated list; empty or unset gives []. */
export function envList() {
  return z
    .string()
    .optional()
    .transform((value) =>
      value === undefined
        ? []
        : value
            .split(",")
            .map((item) => item.trim())
            .filter((item) => item.length > 0),
    );
}

/** A URL with one of the given protocols; optional. */
export function envOptionalUrl(protocols: readonly string[]) {
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === "") return undefined;
      try {
        const url = new URL(value.trim());
        if (!protocols.includes(url.protocol)) {
          ctx.addIssue({ code: "custom", message: `expected a ${protocols.join(" or ")} URL` });
          return z.NEVER;
        }
        return value.trim();
      } catch {
        ctx.addIssue({ code: "custom", message: `not a URL: "${value}"` });
        return z.NEVER;
      }
    });
}

const NODE_ENVS = ["development", "production", "test"] as const;

/**
 * NODE_ENV: `production` turns on the strict defaults; unset or empty is
 * `development`. Any other value stops the boot: `Production` or `prod`
 * silently getting development defaults is what this guards against.
 */
export const envNodeEnv = z
  .string()
  .optional()
  .transform((value, ctx): (typeof NODE_ENVS)[number] => {
    if (value === undefined || value === "") return "development";
    const known = NODE_ENVS.find((name) => name === value);
    if (known) return known;
    ctx.addIssue({ code: "custom", message: `expected ${NODE_ENVS.join(", ")} (lower case), got "${value}"` });
    return z.NEVER;
  });
