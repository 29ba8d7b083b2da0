import type pg from "pg";

/** Defaults of a pool's deadlines; each is a `DatabaseOptions` field. */
export const DEFAULT_DATABASE_LIMITS = {
  /** Longest wait for a pooled connection (or a new one), ms. */
  acquireTimeoutMs: 5_000,
  /** Client-side deadline of every query, ms: a stopped server cannot enforce its own timeout. */
  queryTimeoutMs: 10_000,
  /** Server-side `statement_timeout`, ms; below the client deadline so the server cancels first. */
  statementTimeoutMs: 8_000,
  /** Server-side `idle_in_transaction_session_timeout`, ms; above an upload's stall limit (30 s). */
  idleInTransactionTimeoutMs: 60_000,
  /** Deadline of statements run through `runLongStatement`/`allowLongStatement` (exports, bulk deletes), ms. */
  longStatementTimeoutMs: 30 * 60_000,
} as const;

/**
 * Lets the next statements on `client` run for up to `timeoutMs` on the
 * server (session `statement_timeout`); pass `queryTimeoutMs` as the pg
 * `query_timeout` of each such query (a query object's own field), since
 * the pool's client-side deadline applies otherwise. `restore()` puts the
 * session's default back; call it before releasing the client.
 */
export async function allowLongStatement(
  client: pg.ClientBase,
  timeoutMs: number = DEFAULT_DATABASE_LIMITS.longStatementTimeoutMs,
): Promise<{ queryTimeoutMs: number; restore(): Promise<void> }> {
  await client.query({ text: "SELECT set_config('statement_timeout', $1, false)", values: [String(timeoutMs)] });
  return {
    // The client-side deadline stays a little above the server's, which answers with an error first.
    queryTimeoutMs: timeoutMs + 2_000,
    async restore() {
      await client.query("RESET statement_timeout");
    },
  };
}

/** One long statement (a bulk delete, say) on a connection of its own with `allowLongStatement`'s deadlines. */
export async function runLongStatement<R extends pg.QueryResultRow = pg.QueryResultRow>(
  pool: Pick<pg.Pool, "connect">,
  text: string,
  values: unknown[] = [],
  timeoutMs: number = DEFAULT_DATABASE_LIMITS.longStatementTimeoutMs,
): Promise<pg.QueryResult<R>> {
  const client = await pool.connect();
  let broken = false;
  try {
    const long = await allowLongStatement(client, timeoutMs);
    // pg reads `query_timeout` off the query config at run time; its types do not list it.
    const query: pg.QueryConfig & { query_timeout: number } = { text, values, query_timeout: long.queryTimeoutMs };
    const result = await client.query<R>(query);
    await long.restore();
    return result;
  } catch (error) {
    // The session may still carry the long timeout, or be mid-statement: never hand it to anyone else.
    broken = true;
    throw error;
  } finally {
    client.release(broken);
  }
}
