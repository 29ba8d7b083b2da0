import type pg from "pg";

const PARTITIONED = ["proxy_statistics", "proxy_statistic_responses"] as const;
const PARTITION_LOCK = 72707371;

/** `YYYY-MM-DD` of a UTC day, `days` after `from`. */
function utcDay(from: Date, days: number): string {
  return new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate() + days)).toISOString().slice(0, 10);
}

/**
 * Daily partitions of the statistics tables from today (UTC) to `daysAhead`
 * days ahead, so rows never land in the default partition. Idempotent; one
 * process at a time (advisory lock).
 */
export async function ensureStatisticsPartitions(pool: Pick<pg.Pool, "connect">, { daysAhead = 2, now = new Date() } = {}): Promise<string[]> {
  const client = await pool.connect();
  const created: string[] = [];
  try {
    await client.query("SELECT pg_advisory_lock($1)", [PARTITION_LOCK]);
    for (let day = 0; day <= daysAhead; day++) {
      const from = utcDay(now, day);
      const to = utcDay(now, day + 1);
      for (const table of PARTITIONED) {
        const name = `${table}_p${from.replaceAll("-", "")}`;
        const { rowCount } = await client.query("SELECT 1 FROM pg_class WHERE relname = $1", [name]);
        if (rowCount) continue;
        await client.query(`CREATE TABLE "${name}" PARTITION OF "${table}" FOR VALUES FROM ('${from} 00:00:00+00') TO ('${to} 00:00:00+00')`);
        created.push(name);
      }
    }
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [PARTITION_LOCK]).catch(() => undefined);
    client.release();
  }
  return created;
}

/**
 * Drops daily partitions whose whole day is older than the retention:
 * statistics after `statisticsDays`, response bodies after `responseDays`.
 */
export async function dropExpiredStatistics(pool: Pick<pg.Pool, "query">, { statisticsDays, responseDays, now = new Date() }: { statisticsDays: number; responseDays: number; now?: Date }): Promise<string[]> {
  const dropped: string[] = [];
  for (const [table, days] of [["proxy_statistics", statisticsDays], ["proxy_statistic_responses", responseDays]] as const) {
    const oldestKept = utcDay(now, -days).replaceAll("-", "");
    const { rows } = await pool.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class parent ON parent.oid = i.inhparent
        WHERE parent.relname = $1 AND c.relname ~ ('^' || $1 || '_p[0-9]{8}$')`,
      [table],
    );
    for (const { name } of rows) {
      if (name.slice(-8) < oldestKept) {
        await pool.query(`DROP TABLE "${name}"`);
        dropped.push(name);
      }
    }
  }
  return dropped;
}
