import { createRequire } from "node:module";
import path from "node:path";
import { isReservedIpv4, parseIpv4 } from "@roost/net";
import { asnTableFromMmdb, loadAsnTable, type AsnInfo, type AsnTable } from "./asn-table.js";
import { countryTableFromMmdb, loadCountryTable, type CountryTable } from "./country-table.js";
import { estimateType, type EstimatedType } from "./estimated-type.js";

/** What the upload stores for an address. */
export interface GeoFacts {
  /** ISO 3166-1 alpha-2, or "N/A". */
  country: string;
  asn: AsnInfo | null;
  estimatedType: EstimatedType;
}

export interface GeoDatabase {
  /** ISO 3166-1 alpha-2 country of an IPv4 address (dotted or numeric), or "N/A". */
  lookupCountry(ip: string | number): string;
  /** The AS announcing the address, or null. */
  lookupAsn(ip: string | number): AsnInfo | null;
  /** Country, AS and estimated type in one call. */
  lookup(ip: string | number): GeoFacts;
  /** Where the data came from (for logs and docs/geo.md). */
  readonly sources: { country: string; asn: string };
}

export interface GeoDatabaseOptions {
  /**
   * A country MMDB file. Default: `geo-whois-asn-country-ipv4.mmdb` from
   * @ip-location-db/geo-whois-asn-country-mmdb (CC0). A GeoLite2-Country.mmdb
   * downloaded with the admin's GeoLite key may be passed instead.
   */
  countryMmdbPath?: string;
  /** An ASN CSV with numeric bounds. Default: `asn-ipv4-num.csv` from @ip-location-db/asn (CC BY 4.0). */
  asnCsvPath?: string;
  /** The bytes of a country MMDB (e.g. GeoLite2-Country kept in PostgreSQL); wins over countryMmdbPath. */
  countryMmdb?: { bytes: Buffer; source: string };
  /** The bytes of an ASN MMDB in GeoLite2-ASN layout; wins over asnCsvPath. */
  asnMmdb?: { bytes: Buffer; source: string };
}

const require = createRequire(import.meta.url);

function packageFile(packageName: string, file: string): string {
  return path.join(path.dirname(require.resolve(`${packageName}/package.json`)), file);
}

export function defaultCountryMmdbPath(): string {
  return packageFile("@ip-location-db/geo-whois-asn-country-mmdb", "geo-whois-asn-country-ipv4.mmdb");
}

export function defaultAsnCsvPath(): string {
  return packageFile("@ip-location-db/asn", "asn-ipv4-num.csv");
}

/** A public IPv4 address as a number; -1 for anything else (reserved ranges have no country or AS). */
const toNumber = (ip: string | number): number => {
  const address = typeof ip === "number" ? ip : parseIpv4(ip);
  return address < 0 || isReservedIpv4(address) ? -1 : address;
};

/** Loads both offline databases (about half a second; ~10 MB of memory). */
export async function openGeoDatabase(options: GeoDatabaseOptions = {}): Promise<GeoDatabase> {
  const countryPath = options.countryMmdbPath ?? defaultCountryMmdbPath();
  const asnPath = options.asnCsvPath ?? defaultAsnCsvPath();
  const { countryMmdb, asnMmdb } = options;
  const [country, asn] = await Promise.all([
    countryMmdb ? countryTableFromMmdb(countryMmdb.bytes) : loadCountryTable(countryPath),
    asnMmdb ? asnTableFromMmdb(asnMmdb.bytes) : loadAsnTable(asnPath),
  ]);
  return createGeoDatabase(country, asn, { country: countryMmdb?.source ?? countryPath, asn: asnMmdb?.source ?? asnPath });
}

export function createGeoDatabase(country: CountryTable, asn: AsnTable, sources: { country: string; asn: string }): GeoDatabase {
  const typeOfEntry = asn.entries.map((entry) => estimateType(entry));
  // By address number (toNumber's, -1 for none): an upload looks up every new proxy, reading its address once.
  const countryOf = (address: number): string => {
    const index = address < 0 ? -1 : country.table.lookup(address);
    return index < 0 ? "N/A" : (country.codes[index] ?? "N/A");
  };
  const asnIndexOf = (address: number): number => (address < 0 ? -1 : asn.table.lookup(address));
  return {
    sources,
    lookupCountry: (ip) => countryOf(toNumber(ip)),
    lookupAsn: (ip) => asn.entries[asnIndexOf(toNumber(ip))] ?? null,
    lookup(ip) {
      const address = toNumber(ip);
      const index = asnIndexOf(address);
      return {
        country: countryOf(address),
        asn: asn.entries[index] ?? null,
        estimatedType: typeOfEntry[index] ?? "unknown",
      };
    },
  };
}

/**
 * Opens the databases on first use and shares them afterwards; a failed load
 * is retried on the next call. Lets a process start without paying the load
 * until an upload needs it.
 */
export interface GeoResolver {
  get(): Promise<GeoDatabase>;
  /**
   * Loads the data again and swaps it in once loaded; lookups keep the
   * current database meanwhile and when the load fails (the error is thrown).
   * A resolver that never loaded stays lazy: its first get() reads the new data.
   */
  reload(): Promise<void>;
}

export interface GeoResolverOptions extends GeoDatabaseOptions {
  /** How to open the databases; default openGeoDatabase(options). GeoLite passes a loader that reads PostgreSQL. */
  load?: () => Promise<GeoDatabase>;
}

export function createGeoResolver(options: GeoResolverOptions = {}): GeoResolver {
  const load = options.load ?? (() => openGeoDatabase(options));
  let current: Promise<GeoDatabase> | null = null;
  let generation = 0;
  return {
    get() {
      current ??= load().catch((error: unknown) => {
        current = null;
        throw error;
      });
      return current;
    },
    async reload() {
      if (current === null) return;
      // The latest reload wins even when an earlier, slower one finishes after it.
      const mine = ++generation;
      const next = await load();
      if (mine === generation) current = Promise.resolve(next);
    },
  };
}

/** Answers "N/A" / unknown for everything: the fallback when the databases cannot be loaded. */
export function createUnknownGeoDatabase(): GeoDatabase {
  return {
    sources: { country: "none", asn: "none" },
    lookupCountry: () => "N/A",
    lookupAsn: () => null,
    lookup: () => ({ country: "N/A", asn: null, estimatedType: "unknown" }),
  };
}
