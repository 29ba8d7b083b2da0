/**
 * ioredis's own failures when Redis cannot serve a command: past the command
 * deadline, connection closed, offline queue off, retries used up, or Redis
 * at its maxmemory (noeviction refuses writes). Walks `cause` chains.
 */
const MESSAGES = /^(Command timed out$|Connection is closed\.$|Stream isn't writeable and enableOfflineQueue options is false$|OOM command not allowed)/;

export function isRedisUnavailable(error: unknown): boolean {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current instanceof Error && !seen.has(current)) {
    seen.add(current);
    if (current.name === "MaxRetriesPerRequestError" || MESSAGES.test(current.message)) return true;
    current = current.cause;
  }
  return false;
}

/** What a request that needed Redis answers while it is unavailable: 503 with Retry-After. */
export const redisUnavailable = { status: 503, message: "Service temporarily unavailable, try again shortly", retryAfterSeconds: 1 } as const;
