import { isIP } from "node:net";
import { DEFAULT_DATABASE_LIMITS, runLongStatement } from "@roost/db";
import { parseStoredConfig } from "@roost/global-config";
import { guardedGet, type OutboundGuard } from "@roost/net";
import type pg from "pg";

/** Most bytes one blacklist source may send (the DROP list is about 50 KiB). */
const MAX_BLACKLIST_BYTES = 16 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 30_000;
const MAX_ENTRIES_PER_SOURCE = 1_000_000;

/**
 * The networks of a blacklist text: plain addresses (a /32 or /128),
 * CIDRs, and the DROP list's `CIDR ; SBLnnn` lines. `;` and `#` start
 * comments; anything else on a line is ignored, not guessed at.
 */
export function parseBlacklist(text: string): string[] {
  const networks = new Set<string>();
  for (const raw of text.split(/\r?\n|\r/)) {
    const entry = raw.split(/[;#]/)[0]?.trim() ?? "";
    if (entry === "" || /\s/.test(entry)) continue;
    const [address = "", prefix, extra] = entry.split("/");
    const family = isIP(address);
    if (family === 0 || extra !== undefined) continue;
    const bits = family === 4 ? 32 : 128;
    if (prefix !== undefined && (!/^\d{1,3}$/.test(prefix) || Number(prefix) > bits)) continue;
    networks.add(`${address}/${prefix ?? bits}`);
    if (networks.size >= MAX_ENTRIES_PER_SOURCE) break;
  }
  return [...networks];
}

export interface BlacklistRefreshResult {
  refreshed: string[];
  failed: { source: string; error: string }[];
  /** Ranges of sources no longer configured, removed. */
  droppedRanges: number;
  removedProxies: number;
}

/**
 * Refreshes every configured blacklist source due for it (none of its ranges
 * is younger than `blacklist_interval_seconds`, or it has none), through the
 * outbound guard. A source that fails keeps its previous ranges. Then every
 * proxy inside a range is removed (the per-user counters follow by trigger).
 */
export async function refreshBlacklists(
  pool: pg.Pool,
  guard: OutboundGuard,
  longStatementTimeoutMs: number = DEFAULT_DATABASE_LIMITS.longStatementTimeoutMs,
): Promise<BlacklistRefreshResult> {
  const { rows: configRows } = await pool.query<{ config: unknown }>("SELECT config FROM global_config WHERE id = 1");
  const config = parseStoredConfig(configRows[0]?.config ?? {}).config;
  const sources = config.blacklist_sources;
  const dropped = await pool.query("DELETE FROM blacklist_ranges WHERE NOT (source = ANY($1::text[]))", [sources]);
  const { rows: fresh } = await pool.query<{ source: string }>(
    `SELECT source FROM blacklist_ranges WHERE source = ANY($1::text[])
      GROUP BY source HAVING max(updated_at) > now() - make_interval(secs => $2)`,
    [sources, config.blacklist_interval_seconds],
  );
  const freshSources = new Set(fresh.map((row) => row.source));
  const result: BlacklistRefreshResult = { refreshed: [], failed: [], droppedRanges: dropped.rowCount ?? 0, removedProxies: 0 };
  for (const source of sources) {
    if (freshSources.has(source)) continue;
    try {
      const response = await guardedGet(guard, source, { timeoutMs: FETCH_TIMEOUT_MS, maxBytes: MAX_BLACKLIST_BYTES, headers: { accept: "text/plain, */*;q=0.5" } });
      if (response.status < 200 || response.status >= 300) throw new Error(`HTTP ${response.status}`);
      await replaceRanges(pool, source, parseBlacklist(response.body.toString("utf8")));
      result.refreshed.push(source);
    } catch (error) {
      result.failed.push({ source, error: error instanceof Error ? error.message : String(error) });
    }
  }
  if (result.refreshed.length > 0) {
    // A bulk delete over every user's proxies: the long-statement deadline, not the pool's 8 s statement_timeout.
    const removed = await runLongStatement(pool, "DELETE FROM proxies p WHERE EXISTS (SELECT 1 FROM blacklist_ranges b WHERE b.cidr >>= p.ip::inet)", [], longStatementTimeoutMs);
    result.removedProxies = removed.rowCount ?? 0;
  }
  return result;
}

/** One source's ranges replaced in one transaction, so readers never see it half loaded. */
async function replaceRanges(pool: pg.Pool, source: string, networks: readonly string[]): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("DELETE FROM blacklist_ranges WHERE source = $1", [source]);
    await client.query(
      "INSERT INTO blacklist_ranges (cidr, source, updated_at) SELECT DISTINCT network(n::inet)::inet, $1, now() FROM unnest($2::text[]) AS n ON CONFLICT (source, cidr) DO NOTHING",
      [source, networks],
    );
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
