import type pg from "pg";
import { asnTableFromMmdb, countryTableFromMmdb, GEOLITE_EDITIONS, type GeoLiteEdition } from "@roost/geo";
import { parseStoredConfig, type GlobalConfig } from "@roost/global-config";
import { guardedGet, type OutboundGuard } from "@roost/net";
import type { Logger } from "@roost/observability";
import { extractMmdb, GeoLiteArchiveError, parseSha256File, verifySha256 } from "./geolite-archive.js";
import { withAdvisoryLock } from "./advisory-lock.js";

export interface GeoLiteUpdateDeps {
  pool: pg.Pool;
  /** Every download and redirect passes it (ALLOW_PRIVATE_NETWORK_TARGETS of this service). */
  guard: OutboundGuard;
  /** Tells every instance to reload (Redis pub/sub, docs/geo.md). */
  announce(): Promise<void>;
  logger: Logger;
  /** Deadline of one download, redirects included; 120000 ms. */
  timeoutMs?: number;
  /** Largest archive accepted; 64 MiB. */
  maxArchiveBytes?: number;
}

export type GeoLiteUpdateResult =
  | { outcome: "updated"; editions: { edition: GeoLiteEdition; sha256: string; builtAt: string }[] }
  | { outcome: "removed" }
  | { outcome: "skipped"; reason: "no-key" | "auto-update-off" | "not-due" | "busy" }
  | { outcome: "failed"; error: string };

/** After a failed attempt the scheduled tick tries again this long later at most; seconds. */
const RETRY_AFTER_FAILURE_SEC = 3600;
const UPDATE_LOCK_KEY = 0x67656f31; // one update at a time across instances

interface Downloaded {
  edition: GeoLiteEdition;
  mmdb: Buffer;
  sha256: string;
  builtAt: Date;
}

/**
 * Downloads GeoLite2 Country and ASN when the key is set, auto-update is on
 * and the interval has passed (or `force`, after the key changed). Both are
 * verified (published SHA-256, then opened and flattened) before either is
 * stored, so a failure keeps the current pair; it is logged and written to
 * geolite_update_status. On success every instance is told to reload and a
 * re-derivation of existing proxies is queued (the caller enqueues it).
 */
export async function updateGeoLite(deps: GeoLiteUpdateDeps, { force = false }: { force?: boolean } = {}): Promise<GeoLiteUpdateResult> {
  const config = await readGeoLiteConfig(deps.pool);
  if (config.api_key === "") return removeStored(deps);
  if (!config.auto_update) return { outcome: "skipped", reason: "auto-update-off" };
  const result = await withAdvisoryLock(deps.pool, UPDATE_LOCK_KEY, async (client) => {
    if (!force && !(await isDue(client, config.interval_seconds))) return { outcome: "skipped", reason: "not-due" } as const;
    await client.query(
      `INSERT INTO geolite_update_status (id, last_attempt_at) VALUES (1, now())
       ON CONFLICT (id) DO UPDATE SET last_attempt_at = now()`,
    );
    let downloaded: Downloaded[];
    try {
      downloaded = [];
      for (const edition of [GEOLITE_EDITIONS.country, GEOLITE_EDITIONS.asn]) downloaded.push(await download(deps, config, edition));
    } catch (error) {
      const message = redact(error instanceof Error ? `${error.name}: ${error.message}` : String(error), config.api_key);
      await client.query("UPDATE geolite_update_status SET last_error = $1, last_error_at = now() WHERE id = 1", [message]);
      return { outcome: "failed", error: message } as const;
    }
    await client.query("BEGIN");
    try {
      for (const d of downloaded) {
        await client.query(
          `INSERT INTO geolite_databases (edition, data, sha256, built_at, downloaded_at) VALUES ($1, $2, $3, $4, now())
           ON CONFLICT (edition) DO UPDATE SET data = EXCLUDED.data, sha256 = EXCLUDED.sha256, built_at = EXCLUDED.built_at, downloaded_at = now()`,
          [d.edition, d.mmdb, d.sha256, d.builtAt],
        );
      }
      // A new pass over every proxy starts (a pass in progress restarts from the first id).
      await client.query(
        `UPDATE geolite_update_status SET last_success_at = now(), last_error = NULL, last_error_at = NULL,
                rederive_after_id = 0, rederive_updated = 0 WHERE id = 1`,
      );
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    }
    return {
      outcome: "updated",
      editions: downloaded.map((d) => ({ edition: d.edition, sha256: d.sha256, builtAt: d.builtAt.toISOString() })),
    } as const;
  });
  if (result === null) return { outcome: "skipped", reason: "busy" };
  if (result.outcome === "failed") deps.logger.error("geolite update failed; the current databases stay", { error: result.error });
  if (result.outcome === "updated") {
    deps.logger.info("geolite databases updated", { editions: result.editions });
    await deps.announce();
  }
  return result;
}

/**
 * Without a key the shipped offline databases serve: stored GeoLite data is
 * deleted, every instance reloads, and proxies are re-derived from the offline data.
 */
async function removeStored(deps: GeoLiteUpdateDeps): Promise<GeoLiteUpdateResult> {
  const result = await withAdvisoryLock(deps.pool, UPDATE_LOCK_KEY, async (client) => {
    await client.query("BEGIN");
    try {
      const removed = await client.query("DELETE FROM geolite_databases");
      if ((removed.rowCount ?? 0) > 0) {
        await client.query(
          `INSERT INTO geolite_update_status (id, rederive_after_id) VALUES (1, 0)
           ON CONFLICT (id) DO UPDATE SET rederive_after_id = 0, rederive_updated = 0`,
        );
      }
      await client.query("COMMIT");
      return (removed.rowCount ?? 0) > 0;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    }
  });
  if (!result) return { outcome: "skipped", reason: result === null ? "busy" : "no-key" };
  deps.logger.info("geolite key removed; the offline databases serve again");
  await deps.announce();
  return { outcome: "removed" };
}

async function readGeoLiteConfig(pool: pg.Pool): Promise<GlobalConfig["geolite"]> {
  const { rows } = await pool.query<{ config: unknown }>("SELECT config FROM global_config WHERE id = 1");
  return parseStoredConfig(rows[0]?.config).config.geolite;
}

async function isDue(client: pg.PoolClient, intervalSec: number): Promise<boolean> {
  const { rows } = await client.query<{ due: boolean }>(
    `SELECT (s.last_success_at IS NULL OR s.last_success_at <= now() - make_interval(secs => $1))
        AND (s.last_attempt_at IS NULL OR s.last_attempt_at <= now() - make_interval(secs => $2)) AS due
       FROM geolite_update_status s WHERE s.id = 1`,
    [intervalSec, Math.min(intervalSec, RETRY_AFTER_FAILURE_SEC)],
  );
  return rows[0]?.due ?? true;
}

function downloadUrl(config: GlobalConfig["geolite"], edition: GeoLiteEdition, suffix: string): URL {
  const url = new URL("/app/geoip_download", config.download_base_url);
  url.searchParams.set("edition_id", edition);
  url.searchParams.set("license_key", config.api_key);
  url.searchParams.set("suffix", suffix);
  return url;
}

async function download(deps: GeoLiteUpdateDeps, config: GlobalConfig["geolite"], edition: GeoLiteEdition): Promise<Downloaded> {
  const timeoutMs = deps.timeoutMs ?? 120_000;
  const checksum = await guardedGet(deps.guard, downloadUrl(config, edition, "tar.gz.sha256"), { timeoutMs, maxBytes: 4096 });
  if (checksum.status !== 200) throw new GeoLiteArchiveError(`HTTP ${checksum.status} for the ${edition} checksum`);
  const expected = parseSha256File(checksum.body.toString("utf8"));
  const archive = await guardedGet(deps.guard, downloadUrl(config, edition, "tar.gz"), {
    timeoutMs,
    maxBytes: deps.maxArchiveBytes ?? 64 * 1024 * 1024,
  });
  if (archive.status !== 200) throw new GeoLiteArchiveError(`HTTP ${archive.status} for the ${edition} archive`);
  verifySha256(archive.body, expected);
  const mmdb = await extractMmdb(archive.body, edition);
  return { edition, mmdb, sha256: expected, builtAt: openMmdb(edition, mmdb) };
}

/** Opens the file as the resolver will (maxmind reader, flattened tree); returns its build time. */
function openMmdb(edition: GeoLiteEdition, mmdb: Buffer): Date {
  try {
    if (edition === GEOLITE_EDITIONS.country) {
      const table = countryTableFromMmdb(mmdb);
      if (table.codes.length === 0) throw new Error("no country records");
      return table.builtAt;
    }
    const table = asnTableFromMmdb(mmdb);
    if (table.entries.length === 0) throw new Error("no AS records");
    return table.builtAt ?? new Date();
  } catch (error) {
    throw new GeoLiteArchiveError(`${edition}.mmdb does not open: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

/** The key is part of the download URL; it must not reach the logs or the status row. */
const redact = (text: string, key: string): string => (key === "" ? text : text.split(key).join("[redacted]"));
