import { ascii, ByteWriter, plainDecimal, type CopyRowWriter } from "@roost/db";
import { csvField, EXPORT_COLUMNS } from "./proxy-export-format.js";
import { protocolsOfMask } from "../proxy-identity.js";

/**
 * Turns the csv and json exports' `COPY ... TO STDOUT` text rows into the export's bytes with no JavaScript value
 * per field: byte for byte what `csvLine` and `jsonObject` write (a field that is not plain goes through them).
 * COPY text: tab-separated fields, NULL as `\N`, `\` and `\b \f \n \r \t \v` escaped, so raw tabs and newlines only split.
 */

/**
 * `latest_check`: the timestamp's own text in UTC (ISO DateStyle, `2026-11-24 01:02:03.5`), turned into
 * `2026-11-24T01:02:03.500Z` here because `to_char` is costly in PostgreSQL. Years outside 1-9999 keep
 * `to_char`'s text, and infinity its NULL.
 */
const LATEST_CHECK_SQL = `CASE WHEN p.latest_check >= '0001-01-01 00:00:00+00' AND p.latest_check < '10000-01-01 00:00:00+00'
    THEN (p.latest_check AT TIME ZONE 'UTC')::text
    ELSE to_char(p.latest_check AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END`;

/** The export's columns, in EXPORT_COLUMNS order, as the COPY's select list reads them (alias `p`). */
export const COPY_EXPORT_SELECT = [
  "p.id",
  "p.ip",
  "p.port",
  "p.username",
  "p.password",
  "p.alive_protocols",
  "p.country",
  "p.estimated_type",
  "p.anonymity_level",
  "p.response_time",
  "p.alive",
  LATEST_CHECK_SQL,
  "p.reputation_label",
  "p.reputation_score",
].join(", ");

export class CopyExportError extends Error {
  override readonly name = "CopyExportError";
}

const TAB = 9;
const NEWLINE = 10;
const SPACE = 32;
const QUOTE = 34;
const COMMA = 44;
const BACKSLASH = 92;

/** How a column is written. */
const enum Kind {
  /** An integer: its digits as they are (NULL as 0). */
  Integer,
  /** Text: a JSON string, or a csv cell through csvField (NULL as ""). */
  Text,
  /** Text csv writes as it is (the address): a JSON string, or the text itself (NULL as ""). */
  RawText,
  /** The alive-protocols bitmask: the protocols as a JSON array, or joined with `;`. */
  Mask,
  /** `t` / `f`: true / false (NULL as false). */
  Bool,
  /** Text or NULL: a JSON string or null; in csv the text itself or nothing. */
  NullableText,
  /** A timestamp's text (LATEST_CHECK_SQL) in ISO 8601 with milliseconds, else as NullableText. */
  Timestamp,
  /** A real: as JSON.stringify / String write parseFloat of PostgreSQL's text (NULL as null / 0). */
  Score,
}

const KINDS: readonly Kind[] = [
  Kind.Integer, // id
  Kind.RawText, // ip
  Kind.Integer, // port
  Kind.Text, // username
  Kind.Text, // password
  Kind.Mask, // protocols
  Kind.Text, // country
  Kind.Text, // type
  Kind.Text, // anonymity
  Kind.Integer, // response_time
  Kind.Bool, // alive
  Kind.Timestamp, // latest_check
  Kind.Text, // reputation_label
  Kind.Score, // reputation_score
];
const FIELDS = KINDS.length;

const TRUE = ascii("true");
const FALSE = ascii("false");
const NULL = ascii("null");
const ZERO_TEXT = ascii("0");
const EMPTY_JSON_STRING = ascii('""');
const PROTOCOLS_JSON = Array.from({ length: 16 }, (_, mask) => ascii(JSON.stringify(protocolsOfMask(mask))));
const PROTOCOLS_CSV = Array.from({ length: 16 }, (_, mask) => ascii(protocolsOfMask(mask).join(";")));
/** `{"id":`, `,"ip":`, ... in EXPORT_COLUMNS order. */
const JSON_KEYS = EXPORT_COLUMNS.map((column, i) => ascii(`${i === 0 ? "{" : ","}${JSON.stringify(column)}:`));
const JSON_ROW_END = 125; // }
const ISO_TIMESTAMP_LENGTH = 24; // 2026-11-24T01:02:03.500Z, from at least 19 bytes of timestamp text
/**
 * What a row can add to its COPY text when every field takes the plain path: in json the keys, quotes per
 * field, the row's framing, the widest constant a short field becomes (protocol list, `false`, `null`) and a
 * timestamp's growth to ISO 8601; csv adds less.
 */
const ROW_SLACK = ISO_TIMESTAMP_LENGTH - 19 + JSON_KEYS.reduce((n, key) => n + key.length, 0) + 2 * KINDS.length + 4 + Math.max(...PROTOCOLS_JSON.map((p) => p.length)) + 2 * FALSE.length;
const CSV_HEADER = ascii(`${EXPORT_COLUMNS.join(",")}\n`);

const isNull = (row: Uint8Array, from: number, to: number): boolean => to - from === 2 && row[from] === BACKSLASH && row[from + 1] === 78; // \N

/** The byte each COPY text escape `\c` stands for: `\b \f \n \r \t \v` the control characters, any other byte (`\\`) itself. */
const UNESCAPED = Uint8Array.from({ length: 256 }, (_, c) => c);
for (const [letter, byte] of [["b", 8], ["f", 12], ["n", 10], ["r", 13], ["t", 9], ["v", 11]] as const) UNESCAPED[letter.charCodeAt(0)] = byte;
const unescaped = (c: number): number => UNESCAPED[c] ?? c;

/** The value of a field that holds a backslash escape or non-ASCII bytes. */
export function decodeCopyText(row: Buffer, from: number, to: number): string {
  let slash = from;
  while (slash < to && row[slash] !== BACKSLASH) slash++;
  if (slash === to) return row.toString("utf8", from, to);
  const bytes = Buffer.allocUnsafe(to - from);
  let at = 0;
  for (let i = from; i < to; i++) {
    let c = row[i] ?? 0;
    if (c === BACKSLASH && i + 1 < to) c = unescaped(row[++i] ?? 0);
    bytes[at++] = c;
  }
  return bytes.toString("utf8", 0, at);
}

/** Printable ASCII without `"` and `\`: JSON writes it as it is between quotes (and COPY escaped nothing in it). */
const JSON_PLAIN = Uint8Array.from({ length: 256 }, (_, c) => (c >= 0x20 && c <= 0x7e && c !== QUOTE && c !== BACKSLASH ? 1 : 0));
/** The same without `,`: a csv cell that needs no quotes. */
const CSV_PLAIN = Uint8Array.from(JSON_PLAIN, (plain, c) => (c === COMMA ? 0 : plain));

function allPlain(table: Uint8Array, row: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (table[row[i] ?? 0] === 0) return false;
  return true;
}

/**
 * Whether csvField leaves a cell's first and last byte as they are: not a formula start (`=`, `+`, `-`, `@`;
 * COPY escapes tab and carriage return, the others) and no space at either end.
 */
function csvPlainEnds(row: Uint8Array, from: number, to: number): boolean {
  if (from === to) return true;
  const first = row[from] ?? 0;
  return first !== 61 && first !== 43 && first !== 45 && first !== 64 && first !== SPACE && row[to - 1] !== SPACE;
}

/** The bitmask's digits as a number (0 when NULL or not digits). */
function maskOf(row: Uint8Array, from: number, to: number): number {
  let mask = 0;
  for (let i = from; i < to; i++) {
    const digit = (row[i] ?? 0) - 48;
    if (digit < 0 || digit > 9) return 0;
    mask = mask * 10 + digit;
  }
  return mask & 15;
}

/** `YYYY-MM-DD HH:MM:SS`, where `0` stands for any digit. */
const TIMESTAMP_SHAPE = ascii("0000-00-00 00:00:00");

/**
 * Whether the field is a timestamp's text in ISO DateStyle (`YYYY-MM-DD HH:MM:SS`, up to six fraction digits).
 * Other text with a space where ISO has one is another DateStyle, whose bytes would be wrong: it stops the export.
 */
function isTimestampText(row: Uint8Array, from: number, to: number): boolean {
  if (row[from + 10] !== SPACE) return false;
  const length = to - from;
  let ok = length === 19 || (length >= 21 && length <= 26 && row[from + 19] === 46);
  for (let i = 0; ok && i < length; i++) {
    const c = row[from + i] ?? 0;
    const shape = TIMESTAMP_SHAPE[i] ?? 48;
    ok = i === 19 || (shape === 48 ? c >= 48 && c <= 57 : c === shape);
  }
  if (!ok) throw new CopyExportError(`latest_check is not in ISO DateStyle: ${Buffer.from(row.subarray(from, to)).toString("latin1")}`);
  return true;
}

/** `YYYY-MM-DDTHH:MM:SS.mmmZ` from a timestamp text isTimestampText accepted (milliseconds truncated, as to_char's MS). */
function writeIsoTimestamp(buffer: Uint8Array, at: number, row: Uint8Array, from: number, to: number): number {
  for (let i = 0; i < 19; i++) buffer[at++] = row[from + i] ?? 0;
  buffer[at - 9] = 84; // T
  buffer[at++] = 46; // .
  for (let i = 20; i < 23; i++) buffer[at++] = from + i < to ? (row[from + i] ?? 48) : 48;
  buffer[at++] = 90; // Z
  return at;
}

/** One field of a row, in json or csv. */
function writeField(out: ByteWriter, json: boolean, kind: Kind, row: Buffer, from: number, to: number): void {
  const nul = isNull(row, from, to);
  switch (kind) {
    case Kind.Integer:
      if (nul) out.bytes(ZERO_TEXT);
      else out.slice(row, from, to);
      return;
    case Kind.Mask:
      out.bytes((json ? PROTOCOLS_JSON : PROTOCOLS_CSV)[nul ? 0 : maskOf(row, from, to)] ?? NULL);
      return;
    case Kind.Bool:
      out.bytes(to - from === 1 && row[from] === 116 ? TRUE : FALSE);
      return;
    case Kind.Score: {
      if (nul) {
        out.bytes(json ? NULL : ZERO_TEXT);
        return;
      }
      if (plainDecimal(row, from, to)) out.slice(row, from, to);
      else {
        const value = Number.parseFloat(row.toString("latin1", from, to));
        out.utf8(json ? JSON.stringify(value) : String(value));
      }
      return;
    }
    default:
      // Text, and a timestamp that is to_char's text or NULL (writeRow converts a timestamp's own text).
      if (json) writeJsonText(out, kind, row, from, to, nul);
      else writeCsvText(out, kind, row, from, to, nul);
  }
}

/** A text field as a JSON string (NULL as null or ""). */
function writeJsonText(out: ByteWriter, kind: Kind, row: Buffer, from: number, to: number, nul: boolean): void {
  if (nul) {
    out.bytes(kind === Kind.NullableText || kind === Kind.Timestamp ? NULL : EMPTY_JSON_STRING);
  } else if (allPlain(JSON_PLAIN, row, from, to)) {
    out.byte(QUOTE);
    out.slice(row, from, to);
    out.byte(QUOTE);
  } else {
    out.utf8(JSON.stringify(decodeCopyText(row, from, to)));
  }
}

/** A text field as a csv cell: through csvField, or as it is for the address and the check time (NULL as nothing). */
function writeCsvText(out: ByteWriter, kind: Kind, row: Buffer, from: number, to: number, nul: boolean): void {
  if (nul) return;
  if (kind === Kind.Text) {
    if (csvPlainEnds(row, from, to) && allPlain(CSV_PLAIN, row, from, to)) out.slice(row, from, to);
    else out.utf8(csvField(decodeCopyText(row, from, to)));
  } else if (allPlain(JSON_PLAIN, row, from, to)) {
    out.slice(row, from, to);
  } else {
    out.utf8(decodeCopyText(row, from, to));
  }
}

const NOTHING = Buffer.alloc(0);

/**
 * Line templates: PostgreSQL writes each whole line (one text column,
 * never NULL; proxy-export.ts, templateLineSql), so a row's COPY
 * text is the line with COPY's escapes, which are undone here.
 */
export class CopyLineWriter implements CopyRowWriter {
  rows = 0;
  readonly expansion = 1;

  begin(): Buffer {
    return NOTHING;
  }

  row(out: ByteWriter, data: Buffer, from: number, to: number): void {
    out.room(to - from + 1);
    const buffer = out.buffer;
    let at = out.at;
    for (let i = from; i < to; i++) {
      const c = data[i] ?? 0;
      buffer[at++] = c === BACKSLASH && i + 1 < to ? unescaped(data[++i] ?? 0) : c;
    }
    buffer[at++] = NEWLINE;
    out.at = at;
    this.rows++;
  }

  end(): Buffer {
    return NOTHING;
  }
}

/** csv and json: each row's fields written by the format's rules. */
export class CopyExportWriter implements CopyRowWriter {
  /** Rows written so far. */
  rows = 0;
  /** Output bytes per COPY byte, with a margin: json adds every key, csv almost nothing. */
  readonly expansion: number;
  private readonly ends = new Int32Array(FIELDS);

  constructor(private readonly format: "csv" | "json") {
    this.expansion = format === "json" ? 3.25 : 1.25;
  }

  begin(): Buffer {
    return Buffer.from(this.format === "csv" ? CSV_HEADER : ascii("["));
  }

  end(): Buffer {
    if (this.format === "csv") return NOTHING;
    return Buffer.from(this.rows === 0 ? "]\n" : "\n]\n");
  }

  /** One row: bytes from..to of `data` (without its newline). */
  row(out: ByteWriter, data: Buffer, from: number, to: number): void {
    const ends = this.ends;
    let field = 0;
    for (let i = from; i < to; i++) {
      if (data[i] !== TAB) continue;
      if (field === FIELDS - 1) throw new CopyExportError("COPY row has too many fields");
      ends[field++] = i;
    }
    if (field !== FIELDS - 1) throw new CopyExportError(`COPY row has ${field + 1} fields, expected ${FIELDS}`);
    ends[field] = to;

    writeRow(out, this.format === "json", data, from, to, ends, this.rows === 0);
    this.rows++;
  }
}

/**
 * One row, in json (`,` and a newline before it unless first) or csv (a newline after it), written straight into
 * the buffer after one size check. Plain text is copied as it is scanned; any other field goes through
 * writeField, after which the room is checked again.
 */
function writeRow(out: ByteWriter, json: boolean, data: Buffer, from: number, to: number, ends: Int32Array, first: boolean): void {
  out.room(to - from + ROW_SLACK);
  let buffer = out.buffer;
  let at = out.at;
  if (json) {
    if (!first) buffer[at++] = COMMA;
    buffer[at++] = NEWLINE;
  }
  let start = from;
  for (let f = 0; f < FIELDS; f++) {
    const stop = ends[f] ?? to;
    if (json) {
      const key = JSON_KEYS[f] ?? NULL;
      for (let k = 0; k < key.length; k++) buffer[at++] = key[k] ?? 0;
    } else if (f > 0) {
      buffer[at++] = COMMA;
    }
    const kind = KINDS[f] ?? Kind.Text;
    const nul = isNull(data, start, stop);
    let done = true;
    if ((kind === Kind.Integer || kind === Kind.Score) && !nul && (kind === Kind.Integer || plainDecimal(data, start, stop))) {
      for (let i = start; i < stop; i++) buffer[at++] = data[i] ?? 0;
    } else if (kind === Kind.Timestamp && !nul && isTimestampText(data, start, stop)) {
      if (json) buffer[at++] = QUOTE;
      at = writeIsoTimestamp(buffer, at, data, start, stop);
      if (json) buffer[at++] = QUOTE;
    } else if (kind === Kind.Text || kind === Kind.RawText || kind === Kind.NullableText || kind === Kind.Timestamp) {
      if (nul) {
        done = !json; // csv writes nothing
      } else if (!json && kind === Kind.Text && !csvPlainEnds(data, start, stop)) {
        done = false;
      } else {
        const plain = json || kind !== Kind.Text ? JSON_PLAIN : CSV_PLAIN;
        const open = at;
        if (json) buffer[at++] = QUOTE;
        for (let i = start; i < stop; i++) {
          const c = data[i] ?? 0;
          if (plain[c] === 0) {
            at = open;
            done = false;
            break;
          }
          buffer[at++] = c;
        }
        if (done && json) buffer[at++] = QUOTE;
      }
    } else if (kind === Kind.Mask || kind === Kind.Bool) {
      const constant =
        kind === Kind.Mask ? ((json ? PROTOCOLS_JSON : PROTOCOLS_CSV)[nul ? 0 : maskOf(data, start, stop)] ?? NULL) : stop - start === 1 && data[start] === 116 ? TRUE : FALSE;
      for (let k = 0; k < constant.length; k++) buffer[at++] = constant[k] ?? 0;
    } else {
      done = false;
    }
    if (!done) {
      out.at = at;
      writeField(out, json, kind, data, start, stop);
      out.room(to - stop + ROW_SLACK);
      buffer = out.buffer;
      at = out.at;
    }
    start = stop + 1;
  }
  buffer[at++] = json ? JSON_ROW_END : NEWLINE;
  out.at = at;
}
