import pg from "pg";
import { createTestDatabase, waitFor, type TestDatabase } from "@roost/testkit";
import { createDatabase, type Database } from "./client.js";
import { isDatabaseUnavailable } from "./database-unavailable.js";

describe("createDatabase's pool", () => {
  let database: TestDatabase;
  let db: Database;
  let admin: pg.Client;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = createDatabase({ databaseUrl: database.url, maxConnections: 2 });
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin.end();
    await db.close();
    await database.drop();
  });

  it("survives losing a connection while a caller holds it: the holder's next query fails, the pool goes on", async () => {
    const held = await db.pool.connect();
    const { rows } = await held.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    // pg-pool does not listen to a checked-out client: without the pool's own listener the 'error'
    // the client emits now would be an uncaught exception (the process gone; here, the test failed).
    await admin.query("SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
    // While the holder is not querying: the loss arrives as an event, not as a query's error.
    await waitFor(async () => (await admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [rows[0]!.pid])).rowCount === 0, {
      what: "the backend to be gone",
    });
    await admin.query("SELECT 1");
    await expect(held.query("SELECT 1")).rejects.toThrow();
    held.release(true);
    // The pool opens a fresh connection for the next caller.
    const after = await db.pool.query<{ one: number }>("SELECT 1 AS one");
    expect(after.rows).toEqual([{ one: 1 }]);
  });

  it("gives every connection a listener of its own for its errors", async () => {
    const held = await db.pool.connect();
    try {
      expect(held.listenerCount("error")).toBeGreaterThanOrEqual(1);
    } finally {
      held.release();
    }
  });

  it("sets the server-side deadlines on every session: statement_timeout 8 s and idle_in_transaction_session_timeout 60 s by default", async () => {
    const { rows } = await db.pool.query<{ statement: string; idle: string }>(
      "SELECT current_setting('statement_timeout') AS statement, current_setting('idle_in_transaction_session_timeout') AS idle",
    );
    expect(rows).toEqual([{ statement: "8s", idle: "1min" }]);
  });

  it("the server cancels a statement past statement_timeout and ends a transaction left idle (a 503, not a hang)", async () => {
    // The client-side deadline far above both, so what ends each wait is the server's own limit.
    const limited = createDatabase({ databaseUrl: database.url, maxConnections: 2, statementTimeoutMs: 300, idleInTransactionTimeoutMs: 400, queryTimeoutMs: 20_000 });
    try {
      const started = Date.now();
      const cancelled = await limited.pool.query("SELECT pg_sleep(10)").then(() => null, (error: unknown) => error);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect((cancelled as { code?: string } | null)?.code).toBe("57014");
      expect(isDatabaseUnavailable(cancelled)).toBe(true);

      const held = await limited.pool.connect();
      const { rows } = await held.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      await held.query("BEGIN");
      await waitFor(async () => (await admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [rows[0]!.pid])).rowCount === 0, {
        timeoutMs: 5_000,
        what: "the idle transaction's backend to be ended",
      });
      await expect(held.query("SELECT 1")).rejects.toThrow();
      held.release(true);
    } finally {
      await limited.close();
    }
  });
});
