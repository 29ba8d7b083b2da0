import type { Redis } from "ioredis";
import type pg from "pg";
import { createGeoResolver, openGeoDatabase, type GeoDatabase, type GeoResolver } from "./geo-database.js";

/** The two MaxMind editions Roost downloads, by role. */
export const GEOLITE_EDITIONS = { country: "GeoLite2-Country", asn: "GeoLite2-ASN" } as const;
export type GeoLiteEdition = (typeof GEOLITE_EDITIONS)[keyof typeof GEOLITE_EDITIONS];

/** Redis channel on which the maintenance job announces new GeoLite databases; `prefix` ends with `:`. */
export const geoLiteChannel = (prefix: string): string => `${prefix}geolite:updated`;

type Queryable = Pick<pg.Pool, "query">;

/**
 * Opens the GeoLite databases stored in `geolite_databases`; an edition not
 * stored yet falls back to its shipped offline database.
 */
export async function openStoredGeoDatabase(db: Queryable): Promise<GeoDatabase> {
  const { rows } = await db.query<{ edition: string; data: Buffer; sha256: string }>(
    "SELECT edition, data, sha256 FROM geolite_databases WHERE edition = ANY($1::text[])",
    [Object.values(GEOLITE_EDITIONS)],
  );
  const stored = (edition: GeoLiteEdition) => {
    const row = rows.find((r) => r.edition === edition);
    return row ? { bytes: row.data, source: `${edition} (sha256 ${row.sha256.slice(0, 12)})` } : undefined;
  };
  const countryMmdb = stored(GEOLITE_EDITIONS.country);
  const asnMmdb = stored(GEOLITE_EDITIONS.asn);
  return openGeoDatabase({ ...(countryMmdb ? { countryMmdb } : {}), ...(asnMmdb ? { asnMmdb } : {}) });
}

/** A resolver that serves the stored GeoLite databases when there are any, else the offline ones. */
export function createStoredGeoResolver(db: Queryable): GeoResolver {
  return createGeoResolver({ load: () => openStoredGeoDatabase(db) });
}

export interface GeoLiteReloader {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Reloads `resolver` whenever the channel announces new databases, and after
 * the subscriber reconnects (an announcement may have been missed meanwhile).
 * `subscriber` is a connection in subscriber mode; it may be shared.
 */
export function createGeoLiteReloader(options: {
  resolver: GeoResolver;
  subscriber: Redis;
  /** Key prefix of the deployment, ends with `:`. */
  prefix: string;
  logger: { info(message: string, meta?: object): void; warn(message: string, meta?: object): void };
}): GeoLiteReloader {
  const { resolver, subscriber, logger } = options;
  const channel = geoLiteChannel(options.prefix);
  const reload = (reason: string) => {
    resolver.reload().then(
      () => logger.info("geo databases reloaded", { reason }),
      (error: unknown) => logger.warn("geo databases reload failed; the current ones keep serving", { reason, error }),
    );
  };
  const onMessage = (received: string) => {
    if (received === channel) reload("announcement");
  };
  const onReady = () => reload("subscriber reconnected");
  return {
    async start() {
      subscriber.on("message", onMessage);
      await subscriber.subscribe(channel);
      subscriber.on("ready", onReady);
    },
    async stop() {
      subscriber.off("message", onMessage);
      subscriber.off("ready", onReady);
      await subscriber.unsubscribe(channel).catch(() => undefined);
    },
  };
}
