import { readFile } from "node:fs/promises";
import { flattenMmdbIpv4, mmdbField } from "./mmdb-flatten.js";
import { RangeTable } from "./range-table.js";

export interface AsnInfo {
  asn: number;
  /** Organisation name as registered; "" when the source has none. */
  org: string;
}

export interface AsnTable {
  table: RangeTable;
  /** Value index → AS number and organisation. */
  entries: AsnInfo[];
  /** From the metadata of an MMDB source (a CSV has none). */
  builtAt?: Date;
}

/**
 * Reads an `ip_range_start,ip_range_end,asn,organisation` CSV with numeric
 * IPv4 bounds (the `asn-ipv4-num.csv` of @ip-location-db/asn; organisation
 * names may be quoted with `""` escapes). About 400k rows: read once, kept as
 * typed arrays (~5 MB) plus one entry per distinct AS.
 */
export async function loadAsnTable(csvPath: string): Promise<AsnTable> {
  const text = await readFile(csvPath, "utf8");
  const entries: AsnInfo[] = [];
  const entryIndex = new Map<string, number>();
  const builder = RangeTable.builder(1 << 19);
  let lineStart = 0;
  while (lineStart < text.length) {
    let lineEnd = text.indexOf("\n", lineStart);
    if (lineEnd < 0) lineEnd = text.length;
    const row = parseRow(text, lineStart, lineEnd);
    lineStart = lineEnd + 1;
    if (!row) continue;
    const key = `${row.asn}\u0000${row.org}`;
    let value = entryIndex.get(key);
    if (value === undefined) {
      value = entries.length;
      entries.push({ asn: row.asn, org: row.org });
      entryIndex.set(key, value);
    }
    builder.add(row.start, row.end, value);
  }
  return { table: builder.build(), entries };
}

/**
 * Reads an ASN MMDB (MaxMind GeoLite2-ASN layout: `autonomous_system_number`
 * and `autonomous_system_organization`) into the same table as the CSV.
 */
export function asnTableFromMmdb(buffer: Buffer): AsnTable {
  const flat = flattenMmdbIpv4(buffer, 1 << 19, (record) => {
    const asn = mmdbField(record, "autonomous_system_number");
    if (typeof asn !== "number" || !Number.isInteger(asn) || asn < 0) return null;
    const name = mmdbField(record, "autonomous_system_organization");
    const org = typeof name === "string" ? name : "";
    return { key: `${asn}\u0000${org}`, value: { asn, org } };
  });
  return { table: flat.table, entries: flat.values, builtAt: flat.builtAt };
}

function parseRow(text: string, from: number, to: number): { start: number; end: number; asn: number; org: string } | null {
  const first = text.indexOf(",", from);
  const second = first < 0 ? -1 : text.indexOf(",", first + 1);
  const third = second < 0 ? -1 : text.indexOf(",", second + 1);
  if (third < 0 || third >= to) return null;
  const start = Number(text.slice(from, first));
  const end = Number(text.slice(first + 1, second));
  const asn = Number(text.slice(second + 1, third));
  if (!Number.isInteger(start) || !Number.isInteger(end) || !Number.isInteger(asn) || start > end || end > 0xffffffff) return null;
  let org = text.slice(third + 1, to);
  if (org.endsWith("\r")) org = org.slice(0, -1);
  if (org.startsWith('"') && org.endsWith('"') && org.length >= 2) org = org.slice(1, -1).replace(/""/g, '"');
  return { start, end, asn, org };
}
