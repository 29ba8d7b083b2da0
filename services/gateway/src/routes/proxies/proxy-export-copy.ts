import { ascii, ByteWriter, plainDecimal } from "./byte-writer.js";
import type { CopyRowWriter } from "./copy-out.js";
import { csvField, EXPORT_COLUMNS } from "./proxy-export-format.js";
import { protocolsOfMask } from "./proxy.schema.js";

/**
 * The csv and json exports read the user's rows with `COPY (SELECT ...) TO
 * STDOUT` in PostgreSQL's text format and turn those bytes into the
 * export's bytes here, without a JavaScript value per field: PostgreSQL
 * writes a row's text in C, and decoding fourteen columns a row through the
 * driver, not formatting them, was most of the gateway's work
 * (docs/benchmarks.md, item 18). The output is byte for byte what
 * `csvLine` and `jsonObject` (proxy-export-format.ts) write for the same
 * row: a field that is not plain printable ASCII, or that csv must quote or
 * neutralise, is decoded and goes through those same rules.
 *
 * COPY text format: fields separated by a tab, rows ended by a newline;
 * NULL is `\N`; a backslash, and the control characters backspace, form
 * feed, newline, carriage return, tab and vertical tab inside a value, are
 * written as `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, `\v`; every other byte
 * (other control characters, UTF-8) as it is. So a raw newline always ends
 * a row and a raw tab always ends a field.
 */

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
  `to_char(p.latest_check AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
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
  Kind.NullableText, // latest_check
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
/**
 * What a json row can add to its COPY text when every field takes the
 * plain path: the keys, a pair of quotes per field, the row's framing and
 * the widest constant a short field becomes (a protocol list for a mask,
 * `false` for `f`, `null` for `\N`).
 */
const JSON_ROW_SLACK = JSON_KEYS.reduce((n, key) => n + key.length, 0) + 2 * KINDS.length + 4 + Math.max(...PROTOCOLS_JSON.map((p) => p.length)) + 2 * FALSE.length;
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
function jsonPlain(row: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = row[i] ?? 0;
    if (c < 0x20 || c > 0x7e || c === QUOTE || c === BACKSLASH) return false;
  }
  return true;
}

/**
 * A csv cell csvField leaves as it is: printable ASCII without `"`, `,` and
 * `\`, not starting like a formula (`=`, `+`, `-`, `@`), no space at either
 * end. (Tab and carriage return, the other formula starts, are escaped by
 * COPY, so they never pass.)
 */
function csvPlain(row: Uint8Array, from: number, to: number): boolean {
  if (from === to) return true;
  const first = row[from] ?? 0;
  if (first === 61 || first === 43 || first === 45 || first === 64 || first === SPACE || row[to - 1] === SPACE) return false;
  for (let i = from; i < to; i++) {
    const c = row[i] ?? 0;
    if (c < 0x20 || c > 0x7e || c === QUOTE || c === COMMA || c === BACKSLASH) return false;
  }
  return true;
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
      const text = row.toString("latin1", from, to);
      if (plainDecimal(text, 0, text.length)) out.chars(text, 0, text.length);
      else {
        const value = Number.parseFloat(text);
        out.utf8(json ? JSON.stringify(value) : String(value));
      }
      return;
    }
    default:
      if (json) writeJsonText(out, kind, row, from, to, nul);
      else writeCsvText(out, kind, row, from, to, nul);
  }
}

/** A text field as a JSON string (NULL as null or ""). */
function writeJsonText(out: ByteWriter, kind: Kind, row: Buffer, from: number, to: number, nul: boolean): void {
  if (nul) {
    out.bytes(kind === Kind.NullableText ? NULL : EMPTY_JSON_STRING);
  } else if (jsonPlain(row, from, to)) {
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
    if (csvPlain(row, from, to)) out.slice(row, from, to);
    else out.utf8(csvField(decodeCopyText(row, from, to)));
  } else if (jsonPlain(row, from, to)) {
    out.slice(row, from, to);
  } else {
    out.utf8(decodeCopyText(row, from, to));
  }
}

const NOTHING = Buffer.alloc(0);

/**
 * Line templates: PostgreSQL writes each whole line (one text column,
 * never NULL; proxy-export.service.ts, templateLineSql), so a row's COPY
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
  /** Measured on the bench's rows: json is ~3.05x the COPY text (the keys), csv ~1.07x. */
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

    if (this.format === "json") {
      writeJsonRow(out, data, from, to, ends, this.rows > 0);
      this.rows++;
      return;
    }
    let start = from;
    for (let f = 0; f < FIELDS; f++) {
      const stop = ends[f] ?? to;
      if (f > 0) out.byte(COMMA);
      writeField(out, false, KINDS[f] ?? Kind.Text, data, start, stop);
      start = stop + 1;
    }
    out.byte(NEWLINE);
    this.rows++;
  }
}

/**
 * One json row (`,` and a newline before it unless it is the first),
 * written straight into the buffer after one size check: the export's
 * hot loop (~1M rows), where a size check and a call per key and per
 * field were most of the work. Text copied as it is scanned; a field that
 * is not plain printable ASCII (or a score) goes through writeField, after
 * which the room is checked again.
 */
function writeJsonRow(out: ByteWriter, data: Buffer, from: number, to: number, ends: Int32Array, comma: boolean): void {
  out.room(to - from + JSON_ROW_SLACK);
  let buffer = out.buffer;
  let at = out.at;
  if (comma) buffer[at++] = COMMA;
  buffer[at++] = NEWLINE;
  let start = from;
  for (let f = 0; f < FIELDS; f++) {
    const stop = ends[f] ?? to;
    const key = JSON_KEYS[f] ?? NULL;
    for (let k = 0; k < key.length; k++) buffer[at++] = key[k] ?? 0;
    const kind = KINDS[f] ?? Kind.Text;
    const nul = isNull(data, start, stop);
    let done = true;
    if (kind === Kind.Integer && !nul) {
      for (let i = start; i < stop; i++) buffer[at++] = data[i] ?? 0;
    } else if ((kind === Kind.Text || kind === Kind.RawText || kind === Kind.NullableText) && !nul) {
      const open = at;
      buffer[at++] = QUOTE;
      for (let i = start; i < stop; i++) {
        const c = data[i] ?? 0;
        if (c < 0x20 || c > 0x7e || c === QUOTE || c === BACKSLASH) {
          at = open;
          done = false;
          break;
        }
        buffer[at++] = c;
      }
      if (done) buffer[at++] = QUOTE;
    } else if (kind === Kind.Mask || kind === Kind.Bool) {
      const constant = kind === Kind.Mask ? (PROTOCOLS_JSON[nul ? 0 : maskOf(data, start, stop)] ?? NULL) : stop - start === 1 && data[start] === 116 ? TRUE : FALSE;
      for (let k = 0; k < constant.length; k++) buffer[at++] = constant[k] ?? 0;
    } else {
      done = false;
    }
    if (!done) {
      out.at = at;
      writeField(out, true, kind, data, start, stop);
      out.room(to - stop + JSON_ROW_SLACK);
      buffer = out.buffer;
      at = out.at;
    }
    start = stop + 1;
  }
  buffer[at++] = JSON_ROW_END;
  out.at = at;
}
