import { ascii, ByteWriter, plainDecimal } from "./byte-writer.js";
import { protocolsOfMask } from "./proxy.schema.js";
import { splitRecordText } from "./record-text.js";

/**
 * The list page's body, `{"proxies":[...],"total":N}`, written from the rows'
 * record text (proxy.repository.ts reads the page as one value, each row's
 * `ROW(...)::text` joined by newlines) straight into one buffer: the same bytes as `JSON.stringify` of
 * `toListItem` objects (same keys, order and values), without a string per
 * field or per row. Building the JSON by string concatenation allocated
 * about 1 KiB per row and the body was flattened and encoded again when
 * written; at 16 concurrent clients those allocations set how often V8
 * paused the gateway (docs/benchmarks.md, item 17).
 *
 * Fields of the record, in order: id, ip, port, alive_protocols,
 * estimated_type, response_time, country, anonymity_level, alive,
 * latest_check (ISO text or NULL), reputation_label, reputation_score.
 * A field that is quoted in the record text (empty, or holding a space,
 * comma, parenthesis, quote or backslash), a string with a character JSON
 * escapes or beyond ASCII, and a score that is not a plain decimal go
 * through the general path (splitRecordText, JSON.stringify); everything
 * else is copied character by character.
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

/** Printable ASCII without `"` and `\`: JSON writes such a string as is between quotes. */
function plainString(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === QUOTE || c === BACKSLASH) return false;
  }
  return true;
}

/** Ends of the unquoted fields of the record `text[from, to)`, or false when a field is quoted (then the general path reads it). */
function fieldEnds(text: string, from: number, to: number, ends: Int32Array): boolean {
  const end = to - 1;
  if (text.charCodeAt(from) !== OPEN_PAREN || text.charCodeAt(end) !== CLOSE_PAREN) throw new ProxyPageJsonError("not a record");
  let at = from + 1;
  for (let field = 0; field < FIELDS.length; field++) {
    if (text.charCodeAt(at) === QUOTE) return false;
    let stop = at;
    while (stop < end && text.charCodeAt(stop) !== COMMA) stop++;
    ends[field] = stop;
    at = stop + 1;
    if (stop === end && field !== FIELDS.length - 1) throw new ProxyPageJsonError("record has too few fields");
  }
  if (at - 1 !== end) throw new ProxyPageJsonError("record has too many fields");
  return true;
}

/**
 * One past the `)` that closes the record opening at `from`. Outside quotes
 * record text has no `)` but the last (a value holding one is quoted);
 * inside quotes `""` closes and reopens, and `\` escapes the next character,
 * so a newline inside a quoted value is not taken for a row separator.
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

const ends = new Int32Array(FIELDS.length);

/** What a NULL becomes (as toListItem would write it: no flag is false, no mask no protocols). */
function writeNull(out: ByteWriter, kind: Kind): void {
  out.bytes(kind === Kind.Bool ? FALSE : kind === Kind.Mask ? (PROTOCOLS_JSON[0] ?? NULL) : NULL);
}

function writeValue(out: ByteWriter, kind: Kind, text: string, from: number, to: number): void {
  if (from === to) {
    // NULL (an empty string is always quoted in record text).
    writeNull(out, kind);
    return;
  }
  switch (kind) {
    case Kind.Number:
      out.chars(text, from, to);
      return;
    case Kind.Mask:
      out.bytes(PROTOCOLS_JSON[Number(text.slice(from, to)) & 15] ?? ascii("[]"));
      return;
    case Kind.Bool:
      out.bytes(to - from === 1 && text.charCodeAt(from) === 116 ? TRUE : FALSE);
      return;
    case Kind.Score:
      if (plainDecimal(text, from, to)) out.chars(text, from, to);
      else out.utf8(JSON.stringify(Number.parseFloat(text.slice(from, to))));
      return;
    default:
      if (plainString(text, from, to)) {
        out.room(to - from + 2);
        out.buffer[out.at++] = QUOTE;
        out.chars(text, from, to);
        out.buffer[out.at++] = QUOTE;
      } else {
        out.utf8(JSON.stringify(text.slice(from, to)));
      }
  }
}

/** A field read by the general path, written like writeValue writes an unquoted one. */
function writeDecoded(out: ByteWriter, kind: Kind, value: string | null): void {
  if (value === null) {
    writeNull(out, kind);
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

function writeRow(out: ByteWriter, text: string, from: number, to: number): void {
  if (fieldEnds(text, from, to, ends)) {
    for (const field of ORDER) {
      const spec = FIELDS[field];
      if (!spec) continue;
      const start = field === 0 ? from + 1 : (ends[field - 1] ?? 0) + 1;
      out.bytes(spec.key);
      writeValue(out, spec.kind, text, start, ends[field] ?? 0);
    }
  } else {
    const values = splitRecordText(text.slice(from, to));
    if (values.length !== FIELDS.length) throw new ProxyPageJsonError(`record has ${values.length} fields, expected ${FIELDS.length}`);
    for (const field of ORDER) {
      const spec = FIELDS[field];
      if (!spec) continue;
      out.bytes(spec.key);
      writeDecoded(out, spec.kind, values[field] ?? null);
    }
  }
  out.bytes(ROW_END);
}

/**
 * `{"proxies":[rows...],"total":total}` as UTF-8 bytes, from the page's
 * records joined by newlines (proxy.repository.ts reads the page as one
 * `string_agg` value; null or empty: no rows).
 */
export function proxyPageJson(page: string | null, total: number): Buffer {
  const text = page ?? "";
  const out = new ByteWriter(32 + text.length * 3);
  out.bytes(OPEN);
  for (let from = 0; from < text.length; ) {
    if (from > 0) {
      out.room(1);
      out.buffer[out.at++] = COMMA;
    }
    const to = recordEnd(text, from);
    writeRow(out, text, from, to);
    if (to < text.length && text.charCodeAt(to) !== NEWLINE) throw new ProxyPageJsonError("records not separated by a newline");
    from = to + 1;
  }
  out.bytes(TOTAL);
  out.utf8(String(total));
  out.room(1);
  out.buffer[out.at++] = 125; // }
  return out.written();
}
