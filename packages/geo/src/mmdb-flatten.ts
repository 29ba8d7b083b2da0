import { Reader } from "maxmind";
import { formatIpv4 } from "@roost/net";
import { RangeTable } from "./range-table.js";

export interface FlatMmdb<T> {
  table: RangeTable;
  /** Value index → decoded value. */
  values: T[];
  /** From the database's metadata. */
  databaseType: string;
  builtAt: Date;
}

/** A record's field, or undefined when the record is not an object. */
export const mmdbField = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;

/**
 * Flattens the IPv4 part of an MMDB search tree (any record size, IPv4 or
 * IPv6 tree) into a RangeTable. The maxmind reader decodes each distinct data
 * record once; the tree is walked here because a `get()` per address costs
 * ~2 µs and an upload may hold a million. `decode` returns null for records
 * without a usable value; equal keys share one value index.
 */
export function flattenMmdbIpv4<T>(
  buffer: Buffer,
  capacity: number,
  decode: (record: unknown) => { key: string; value: T } | null,
): FlatMmdb<T> {
  const reader = new Reader<Record<string, unknown>>(buffer);
  const { nodeCount, recordSize, ipVersion, databaseType, buildEpoch } = reader.metadata;
  const records = recordReader(buffer, recordSize);

  let root = 0;
  if (ipVersion === 6) {
    // IPv4 addresses live under ::/96 in an IPv6 tree.
    for (let depth = 0; depth < 96 && root < nodeCount; depth++) root = records.left(root);
  }

  const values: T[] = [];
  const indexOfKey = new Map<string, number>();
  const valueOfPointer = new Map<number, number>();
  const builder = RangeTable.builder(capacity);

  const resolve = (pointer: number, start: number): number => {
    const cached = valueOfPointer.get(pointer);
    if (cached !== undefined) return cached;
    const decoded = decode(reader.get(formatIpv4(start)));
    let index = -1;
    if (decoded) {
      index = indexOfKey.get(decoded.key) ?? values.length;
      if (index === values.length) {
        values.push(decoded.value);
        indexOfKey.set(decoded.key, index);
      }
    }
    valueOfPointer.set(pointer, index);
    return index;
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

  return { table: builder.build(), values, databaseType, builtAt: buildEpoch };
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
