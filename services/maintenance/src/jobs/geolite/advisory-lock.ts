import type pg from "pg";

/**
 * Runs `work` on one connection holding the session advisory lock `key`, so
 * one instance at a time does it; null when another holds it.
 */
export async function withAdvisoryLock<T>(pool: pg.Pool, key: number, work: (client: pg.PoolClient) => Promise<T>): Promise<T | null> {
  const client = await pool.connect();
  try {
    const { rows } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock($1) AS locked", [key]);
    if (!rows[0]?.locked) return null;
    try {
      return await work(client);
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [key]);
    }
  } finally {
    client.release();
  }
}
