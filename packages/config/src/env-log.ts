import { z } from "zod";

/** winston's npm levels, most severe first: the one list every service's `LOG_LEVEL` accepts. */
export const LOG_LEVELS = ["error", "warn", "info", "http", "verbose", "debug", "silly"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** `LOG_LEVEL`: one of {@link LOG_LEVELS}; unset gives `info`. */
export function envLogLevel() {
  return z.enum(LOG_LEVELS).default("info");
}
