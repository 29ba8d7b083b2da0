import type pg from "pg";
import { openStoredGeoDatabase, type GeoDatabase } from "@roost/geo";
import { withAdvisoryLock } from "./advisory-lock.js";

export interface RederiveResult {
  /** Proxies read in this run. */
  scanned: number;
  /** Proxies whose country, asn or estimated_type changed. */
  updated: number;
  /** True when the pass is not finished (time budget used up); the caller runs again. */
  more: boolean;
  /** False when no pass was pending or another instance holds it. */
  ran: boolean;
}

/**
 * The stored GeoLite databases, opened again only when their checksums
 * change, so a job that runs every few minutes does not reload ~10 MB.
 */
export function createStoredGeoCache(pool: pg.Pool): { get(): Promise<GeoDatabase> } {
  let cached: { version: string; geo: GeoDatabase } | null = null;
  return {
    async get() {
      const { rows } = await pool.query<{ version: string | null }>(
        "SELECT string_agg(edition || ':' || sha256, ',' ORDER BY edition) AS version FROM geolite_databases",
      );
      const version = rows[0]?.version ?? "offline";
      if (cached?.version !== version) cached = { version, geo: await openStoredGeoDatabase(pool) };
      return cached.geo;
    },
  };
}

const REDERIVE_LOCK_KEY = 0x67656f32;

/**
 * Continues the pass that re-derives country, asn and estimated_type of every
 * proxy after a GeoLite update: batches in id order from the cursor in
 * geolite_update_status, one set-based UPDATE per batch that writes only
 * rows whose values change, the cursor saved after each batch so a crash
 * resumes where it stopped.
 */
export async function rederiveProxyGeo(
  pool: pg.Pool,
  geo: () => Promise<GeoDatabase>,
  { batchSize = 5000, budgetMs = 20_000 }: { batchSize?: number; budgetMs?: number } = {},
): Promise<RederiveResult> {
  const deadline = Date.now() + budgetMs;
  const result = await withAdvisoryLock(pool, REDERIVE_LOCK_KEY, async (client): Promise<RederiveResult> => {
    const status = await client.query<{ after: number | null }>("SELECT rederive_after_id AS after FROM geolite_update_status WHERE id = 1");
    let after = status.rows[0]?.after ?? null;
    const outcome: RederiveResult = { scanned: 0, updated: 0, more: false, ran: after !== null };
    if (after === null) return outcome;
    const database = await geo();
    while (after !== null) {
      const batch: pg.QueryResult<{ id: number; ip: string }> = await client.query<{ id: number; ip: string }>("SELECT id, ip FROM proxies WHERE id > $1 ORDER BY id LIMIT $2", [after, batchSize]);
      const ids: number[] = [];
      const countries: string[] = [];
      const asns: (number | null)[] = [];
      const types: string[] = [];
      for (const row of batch.rows) {
        const facts = database.lookup(row.ip);
        ids.push(row.id);
        countries.push(facts.country);
        asns.push(facts.asn?.asn ?? null);
        types.push(facts.estimatedType);
      }
      const last = batch.rows.at(-1)?.id;
      const next: number | null = batch.rows.length < batchSize || last === undefined ? null : last;
      await client.query("BEGIN");
      try {
        const written = await client.query(
          `UPDATE proxies p SET country = u.country, asn = u.asn, estimated_type = u.type
             FROM unnest($1::int[], $2::text[], $3::int[], $4::text[]) AS u(id, country, asn, type)
            WHERE p.id = u.id AND (p.country, p.asn, p.estimated_type) IS DISTINCT FROM (u.country, u.asn, u.type)`,
          [ids, countries, asns, types],
        );
        // Only moves the cursor it read: a new download meanwhile (cursor reset to 0) wins.
        const moved = await client.query(
          `UPDATE geolite_update_status SET rederive_after_id = $1, rederive_updated = rederive_updated + $2
            WHERE id = 1 AND rederive_after_id = $3`,
          [next, written.rowCount ?? 0, after],
        );
        await client.query("COMMIT");
        outcome.scanned += ids.length;
        outcome.updated += written.rowCount ?? 0;
        if (moved.rowCount === 0) {
          // A new download restarted the pass: the next run starts it with the new data.
          outcome.more = true;
          break;
        }
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      }
      after = next;
      // At least one batch per run, so every run moves the cursor.
      if (after !== null && Date.now() > deadline) {
        outcome.more = true;
        break;
      }
    }
    return outcome;
  });
  return result ?? { scanned: 0, updated: 0, more: false, ran: false };
}
