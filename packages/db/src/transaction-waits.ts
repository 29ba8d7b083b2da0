import type { DbHandle } from "./client.js";

/**
 * Bounds how long the current transaction waits for a lock and for any one
 * statement (`SET LOCAL`, so only this transaction), so a request answers
 * instead of hanging on a locked row. A `lockTimeoutMs` below `timeoutMs`
 * lets a caller tell a lock wait (SQLSTATE 55P03) from a slow statement
 * (57014); with equal values the statement timeout usually fires first.
 */
export async function limitTransactionWaits(tx: DbHandle, timeoutMs: number, lockTimeoutMs = timeoutMs): Promise<void> {
  await tx.$queryRaw`SELECT set_config('lock_timeout', ${String(lockTimeoutMs)}, true), set_config('statement_timeout', ${String(timeoutMs)}, true)`;
}
