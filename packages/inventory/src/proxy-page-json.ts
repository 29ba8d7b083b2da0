import { ascii, ByteWriter, plainDecimal, splitRecordText } from "@roost/db";
import { protocolsOfMask } from "./proxy-identity.js";

/**
 * The list page's body, `{"proxies":[...],"total":N}`, written from the rows' record text into one buffer:
 * the same bytes as `JSON.stringify` of `toListItem` objects, without a string per field or per row. Plain
 * records are copied in one pass; one with a quoted field, a character to escape or a non-digit mask is split.
 */

const OPEN = ascii('{"proxies":[');
const ID = ascii('{"id":');
const IP = ascii(',"ip":');
const PORT = ascii(',"port":');
const PROTOCOLS = ascii(',"protocols":');
const TYPE = ascii(',"estimated_type":');
const RESPONSE_TIME = ascii(',"response_time":');
const COUNTRY = ascii(',"country":');
const ANONYMITY = ascii(',"anonymity_level":');
const ALIVE = ascii(',"alive":');
const LATEST_CHECK = ascii(',"latest_check":');
const SCORE = ascii(',"reputation":{"overall":{"kind":"overall","score":');
const LABEL = ascii(',"label":');
const ROW_END = ascii("}}}");
const TOTAL = ascii('],"total":');
const TRUE = ascii("true");
const FALSE = ascii("false");
const NULL = ascii("null");
const PROTOCOLS_JSON = Array.from({ length: 16 }, (_, mask) => ascii(JSON.stringify(protocolsOfMask(mask))));

const QUOTE = 34;
const OPEN_PAREN = 40;
const CLOSE_PAREN = 41;
const COMMA = 44;
const NEWLINE = 10;
const BACKSLASH = 92;

/** Field kinds, in record order. */
const enum Kind {
  Number,
  String,
  Mask,
  Bool,
  NullableString,
  Score,
}
const FIELDS: readonly { key: Uint8Array; kind: Kind }[] = [
  { key: ID, kind: Kind.Number },
  { key: IP, kind: Kind.String },
  { key: PORT, kind: Kind.Number },
  { key: PROTOCOLS, kind: Kind.Mask },
  { key: TYPE, kind: Kind.String },
  { key: RESPONSE_TIME, kind: Kind.Number },
  { key: COUNTRY, kind: Kind.String },
  { key: ANONYMITY, kind: Kind.String },
  { key: ALIVE, kind: Kind.Bool },
  { key: LATEST_CHECK, kind: Kind.NullableString },
  // The score is written before the label (toListItem's key order), see writeRow.
  { key: LABEL, kind: Kind.String },
  { key: SCORE, kind: Kind.Score },
];

export class ProxyPageJsonError extends Error {
  override readonly name = "ProxyPageJsonError";
}

/** JSON writes a character as is between quotes when it is printable ASCII other than `"` and `\`. */
const PRINTABLE_FIRST = 0x20;
const PRINTABLE_LAST = 0x7e;
const LOWER_T = 116;
const DIGIT_0 = 48;
const DIGIT_9 = 57;

/**
 * The most a plain row writes beyond its own text: every key, the row's braces and separator, and per
 * field at most 40 bytes more (a one-digit mask becomes up to 36 bytes of protocols, a NULL `false` or
 * `null`, a string its two quotes, a score at most the 24 characters of a float's shortest form).
 */
const ROW_BOUND = FIELDS.reduce((n, f) => n + f.key.length, 0) + ROW_END.length + 1 + FIELDS.length * 40;

/** Copies a constant at `at` and returns where it ends: past 8 bytes a native copy is quicker than the loop. */
function copyKey(buffer: Buffer, at: number, key: Uint8Array): number {
  if (key.length > 8) {
    buffer.set(key, at);
    return at + key.length;
  }
  for (let i = 0; i < key.length; i++) buffer[at++] = key[i] ?? 0;
  return at;
}

/**
 * Writes the record opening at `from` in one pass when no field is quoted and JSON copies every character
 * as is. Returns one past the record's `)`, or -1 having written nothing when the general path is needed (a
 * quoted field, a character to escape, a non-digit mask, or an incomplete record, which that path reports).
 */
function writePlainRow(out: ByteWriter, text: string, from: number): number {
  const length = text.length;
  if (text.charCodeAt(from) !== OPEN_PAREN) return -1;
  out.room(ROW_BOUND + length - from);
  const buffer = out.buffer;
  let at = out.at;
  let i = from + 1;
  let labelFrom = 0;
  let labelTo = 0;
  for (let field = 0; field < FIELDS.length; field++) {
    const spec = FIELDS[field];
    if (!spec) return -1;
    const valueFrom = i;
    let c = text.charCodeAt(i);
    while (i < length && c !== COMMA && c !== CLOSE_PAREN) {
      if (c < PRINTABLE_FIRST || c > PRINTABLE_LAST || c === QUOTE || c === BACKSLASH) return -1;
      c = text.charCodeAt(++i);
    }
    if (i >= length) return -1;
    const last = field === FIELDS.length - 1;
    if (c === CLOSE_PAREN && !last) throw new ProxyPageJsonError("record has too few fields");
    if (c === COMMA && last) throw new ProxyPageJsonError("record has too many fields");
    const valueTo = i++;
    // The label is written after the score, below (toListItem's key order).
    if (spec.key === LABEL) {
      labelFrom = valueFrom;
      labelTo = valueTo;
      continue;
    }
    at = copyKey(buffer, at, spec.key);
    if (valueFrom === valueTo) {
      // NULL (an empty string is always quoted in record text).
      const value = spec.kind === Kind.Bool ? FALSE : spec.kind === Kind.Mask ? (PROTOCOLS_JSON[0] ?? NULL) : NULL;
      at = copyKey(buffer, at, value);
      continue;
    }
    switch (spec.kind) {
      case Kind.Number:
        for (let k = valueFrom; k < valueTo; k++) buffer[at++] = text.charCodeAt(k);
        break;
      case Kind.Mask: {
        let mask = 0;
        for (let k = valueFrom; k < valueTo; k++) {
          const digit = text.charCodeAt(k);
          if (digit < DIGIT_0 || digit > DIGIT_9) return -1;
          mask = (mask * 10 + digit - DIGIT_0) % 16;
        }
        at = copyKey(buffer, at, PROTOCOLS_JSON[mask] ?? NULL);
        break;
      }
      case Kind.Bool:
        at = copyKey(buffer, at, valueTo - valueFrom === 1 && text.charCodeAt(valueFrom) === LOWER_T ? TRUE : FALSE);
        break;
      case Kind.Score:
        if (plainDecimal(text, valueFrom, valueTo)) {
          for (let k = valueFrom; k < valueTo; k++) buffer[at++] = text.charCodeAt(k);
        } else {
          at += buffer.write(JSON.stringify(Number.parseFloat(text.slice(valueFrom, valueTo))), at, "latin1");
        }
        break;
      default:
        buffer[at++] = QUOTE;
        for (let k = valueFrom; k < valueTo; k++) buffer[at++] = text.charCodeAt(k);
        buffer[at++] = QUOTE;
    }
  }
  // The label, after the score (the record's last field).
  at = copyKey(buffer, at, LABEL);
  if (labelFrom === labelTo) {
    at = copyKey(buffer, at, NULL);
  } else {
    buffer[at++] = QUOTE;
    for (let k = labelFrom; k < labelTo; k++) buffer[at++] = text.charCodeAt(k);
    buffer[at++] = QUOTE;
  }
  out.at = copyKey(buffer, at, ROW_END);
  return i;
}

/**
 * One past the `)` closing the record opening at `from`. Outside quotes the only `)` is the last; inside
 * them `""` closes and reopens and `\` escapes the next character, so a quoted newline is not a row separator.
 */
function recordEnd(text: string, from: number): number {
  if (text.charCodeAt(from) !== OPEN_PAREN) throw new ProxyPageJsonError("not a record");
  let quoted = false;
  for (let at = from + 1; at < text.length; at++) {
    const c = text.charCodeAt(at);
    if (quoted) {
      if (c === BACKSLASH) at++;
      else if (c === QUOTE) quoted = false;
    } else if (c === QUOTE) {
      quoted = true;
    } else if (c === CLOSE_PAREN) {
      return at + 1;
    }
  }
  throw new ProxyPageJsonError("unterminated record");
}

/** A field read by the general path (NULL as toListItem wrote it: no flag is false, no mask no protocols). */
function writeDecoded(out: ByteWriter, kind: Kind, value: string | null): void {
  if (value === null) {
    out.bytes(kind === Kind.Bool ? FALSE : kind === Kind.Mask ? (PROTOCOLS_JSON[0] ?? NULL) : NULL);
    return;
  }
  switch (kind) {
    case Kind.Number:
      out.utf8(value);
      return;
    case Kind.Mask:
      out.bytes(PROTOCOLS_JSON[Number(value) & 15] ?? ascii("[]"));
      return;
    case Kind.Bool:
      out.bytes(value === "t" ? TRUE : FALSE);
      return;
    case Kind.Score:
      out.utf8(plainDecimal(value, 0, value.length) ? value : JSON.stringify(Number.parseFloat(value)));
      return;
    default:
      out.utf8(JSON.stringify(value));
  }
}

/** Fields in toListItem's key order: the score (last in the record) before the label. */
const ORDER = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 10] as const;

/** The general path: a record with a quoted field or a character to escape, split by splitRecordText. */
function writeDecodedRow(out: ByteWriter, record: string): void {
  const values = splitRecordText(record);
  if (values.length !== FIELDS.length) throw new ProxyPageJsonError(`record has ${values.length} fields, expected ${FIELDS.length}`);
  for (const field of ORDER) {
    const spec = FIELDS[field];
    if (!spec) continue;
    out.bytes(spec.key);
    writeDecoded(out, spec.kind, values[field] ?? null);
  }
  out.bytes(ROW_END);
}

/**
 * `{"proxies":[rows...],"total":total}` as UTF-8 bytes, from the page's
 * records joined by newlines (proxy-read.repository.ts reads the page as one
 * `string_agg` value; null or empty: no rows).
 */
export function proxyPageJson(page: string | null, total: number): Buffer {
  const text = page ?? "";
  // A plain row writes about 3.5 times its text (the keys); four times leaves the buffer one size.
  const out = new ByteWriter(64 + text.length * 4);
  out.bytes(OPEN);
  for (let from = 0; from < text.length; ) {
    if (from > 0) out.byte(COMMA);
    let to = writePlainRow(out, text, from);
    if (to === -1) {
      to = recordEnd(text, from);
      writeDecodedRow(out, text.slice(from, to));
    }
    if (to < text.length && text.charCodeAt(to) !== NEWLINE) throw new ProxyPageJsonError("records not separated by a newline");
    from = to + 1;
  }
  out.bytes(TOTAL);
  out.utf8(String(total));
  out.room(1);
  out.buffer[out.at++] = 125; // }
  return out.written();
}
