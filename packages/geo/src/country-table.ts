import { readFile } from "node:fs/promises";
import { Reader, type CountryResponse } from "maxmind";
import { formatIpv4 } from "@roost/net";
import { RangeTable } from "./range-table.js";

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
 * flattens its IPv4 part into a RangeTable. The maxmind reader decodes each
 * distinct data record once (a few hundred); the tree is walked here, because
 * a maxmind `get()` per address costs ~2 µs and an upload may hold a million.
 */
export async function loadCountryTable(mmdbPath: string): Promise<CountryTable> {
  const buffer = await readFile(mmdbPath);
  const reader = new Reader<CountryResponse>(buffer);
  const { nodeCount, recordSize, ipVersion, databaseType, buildEpoch } = reader.metadata;
  const records = recordReader(buffer, recordSize);

  let root = 0;
  if (ipVersion === 6) {
    // IPv4 addresses live under ::/96 in an IPv6 tree.
    for (let depth = 0; depth < 96 && root < nodeCount; depth++) root = records.left(root);
  }

  const codes: string[] = [];
  const codeIndex = new Map<string, number>();
  const valueOfPointer = new Map<number, number>();
  const builder = RangeTable.builder(1 << 16);

  const resolve = (pointer: number, start: number): number => {
    const cached = valueOfPointer.get(pointer);
    if (cached !== undefined) return cached;
    const record: unknown = reader.get(formatIpv4(start));
    const code = countryCodeOf(record);
    let value = -1;
    if (code) {
      value = codeIndex.get(code) ?? codes.length;
      if (value === codes.length) {
        codes.push(code);
        codeIndex.set(code, value);
      }
    }
    valueOfPointer.set(pointer, value);
    return value;
  };

  const visit = (node: number, depth: number, start: number): void => {
    if (node >= nodeCount || depth === 32) {
      const end = start + 2 ** (32 - depth) - 1;
      builder.add(start, end, node > nodeCount ? resolve(node, start) : -1);
      return;
    }
    visit(records.left(node), depth + 1, start);
    visit(records.right(node), depth + 1, start + 2 ** (31 - depth));
  };
  visit(root, 0, 0);

  return { table: builder.build(), codes, databaseType, builtAt: buildEpoch };
}

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;

/** ip-location-db records carry `country_code`; MaxMind GeoLite2 ones `country.iso_code`. */
function countryCodeOf(record: unknown): string | null {
  const candidates = [field(record, "country_code"), field(field(record, "country"), "iso_code"), field(field(record, "registered_country"), "iso_code")];
  for (const candidate of candidates) {
    if (typeof candidate === "string" && ALPHA2.test(candidate.toUpperCase())) return candidate.toUpperCase();
  }
  return null;
}

/** Left and right records of a search-tree node (MMDB spec: 24, 28 or 32-bit records). */
function recordReader(buffer: Buffer, recordSize: number): { left(node: number): number; right(node: number): number } {
  switch (recordSize) {
    case 24:
      return {
        left: (node) => {
          const o = node * 6;
          return ((buffer[o] ?? 0) << 16) | ((buffer[o + 1] ?? 0) << 8) | (buffer[o + 2] ?? 0);
        },
        right: (node) => {
          const o = node * 6 + 3;
          return ((buffer[o] ?? 0) << 16) | ((buffer[o + 1] ?? 0) << 8) | (buffer[o + 2] ?? 0);
        },
      };
    case 28:
      return {
        left: (node) => {
          const o = node * 7;
          return (((buffer[o + 3] ?? 0) & 0xf0) << 20) | ((buffer[o] ?? 0) << 16) | ((buffer[o + 1] ?? 0) << 8) | (buffer[o + 2] ?? 0);
        },
        right: (node) => {
          const o = node * 7;
          return (((buffer[o + 3] ?? 0) & 0x0f) << 24) | ((buffer[o + 4] ?? 0) << 16) | ((buffer[o + 5] ?? 0) << 8) | (buffer[o + 6] ?? 0);
        },
      };
    case 32:
      return { left: (node) => buffer.readUInt32BE(node * 8), right: (node) => buffer.readUInt32BE(node * 8 + 4) };
    default:
      throw new Error(`unsupported MMDB record size ${recordSize}`);
  }
}
