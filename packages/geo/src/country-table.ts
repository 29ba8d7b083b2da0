import { readFile } from "node:fs/promises";
import { flattenMmdbIpv4, mmdbField as field } from "./mmdb-flatten.js";
import type { RangeTable } from "./range-table.js";

export interface CountryTable {
  table: RangeTable;
  /** Value index → ISO 3166-1 alpha-2 code. */
  codes: string[];
  /** From the database's metadata. */
  databaseType: string;
  builtAt: Date;
}

const ALPHA2 = /^[A-Z]{2}$/;

/**
 * Reads a country MMDB file (any record size, IPv4 or IPv6 tree) and
 * flattens its IPv4 part into a RangeTable (see mmdb-flatten.ts).
 */
export async function loadCountryTable(mmdbPath: string): Promise<CountryTable> {
  return countryTableFromMmdb(await readFile(mmdbPath));
}

/** The same from the bytes of an MMDB file (e.g. a GeoLite2-Country.mmdb kept in PostgreSQL). */
export function countryTableFromMmdb(buffer: Buffer): CountryTable {
  const flat = flattenMmdbIpv4(buffer, 1 << 16, (record) => {
    const code = countryCodeOf(record);
    return code ? { key: code, value: code } : null;
  });
  return { table: flat.table, codes: flat.values, databaseType: flat.databaseType, builtAt: flat.builtAt };
}

/** ip-location-db records carry `country_code`; MaxMind GeoLite2 ones `country.iso_code`. */
function countryCodeOf(record: unknown): string | null {
  const candidates = [field(record, "country_code"), field(field(record, "country"), "iso_code"), field(field(record, "registered_country"), "iso_code")];
  for (const candidate of candidates) {
    if (typeof candidate === "string" && ALPHA2.test(candidate.toUpperCase())) return candidate.toUpperCase();
  }
  return null;
}
