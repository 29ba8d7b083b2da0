import { DatabaseUnavailableError } from "./fail-fast-pool.js";

/**
 * Tells "the database is unavailable" (no connection in time, a query past
 * its deadline, connection refused or lost, the server shutting down or full)
 * apart from every other database error, so a request can answer 503 with
 * Retry-After instead of 500. Walks `cause` chains, since Prisma and its pg
 * adapter wrap the driver's error.
 */

// Socket-level failures of the connection itself.
const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);
// SQLSTATEs: statement timeout (57014, also a cancel), shutdowns (57P01..57P03), too many connections (53300).
const SQLSTATES = new Set(["57014", "57P01", "57P02", "57P03", "53300"]);
// Prisma: can't reach server, connect timeout, server closed the connection, pool timeout, and a
// transaction not started or finished within its limits (P2028: maxWait or timeout passed).
const PRISMA_CODES = new Set(["P1001", "P1002", "P1017", "P2024", "P2028"]);
const MESSAGES = /database unavailable|timeout exceeded when trying to connect|connection terminated|query read timeout|connection timeout|can't reach database server|server closed the connection|connection is closed|terminating connection|client has encountered a connection error/i;

function fieldOf(value: object, name: string): unknown {
  return (value as Record<string, unknown>)[name];
}

export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current !== null && typeof current === "object" && !seen.has(current)) {
    seen.add(current);
    const code = fieldOf(current, "code");
    if (typeof code === "string") {
      if (NETWORK_CODES.has(code) || SQLSTATES.has(code) || PRISMA_CODES.has(code) || code.startsWith("08")) return true;
    }
    // @prisma/adapter-pg keeps the driver's SQLSTATE in `originalCode` of its cause.
    const originalCode = fieldOf(current, "originalCode");
    if (typeof originalCode === "string" && (SQLSTATES.has(originalCode) || originalCode.startsWith("08"))) return true;
    const message = fieldOf(current, "message");
    if (typeof message === "string" && MESSAGES.test(message)) return true;
    const meta = fieldOf(current, "meta");
    const adapterError = meta !== null && typeof meta === "object" ? fieldOf(meta, "driverAdapterError") : undefined;
    if (adapterError !== undefined && isDatabaseUnavailable(adapterError)) return true;
    current = fieldOf(current, "cause");
  }
  return false;
}

/** What a caller that recognised `isDatabaseUnavailable` answers: 503 with this message and Retry-After. */
export const databaseUnavailable = {
  status: 503,
  message: "Database temporarily unavailable, try again shortly",
  retryAfterSeconds: 5,
} as const;
