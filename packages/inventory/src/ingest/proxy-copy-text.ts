/**
 * Rows of `proxies` in COPY text format (columns: COPY_TEXT_COLUMNS), written straight into a buffer so no
 * strings per row outlive parsing. The id is not known yet, so each row starts with a fixed-width field that
 * `withIds` fills with zero-padded digits (PostgreSQL reads `0000000042` as 42).
 */
export const COPY_TEXT_COLUMNS = "id, user_id, ip, port, username, password, scheme_hint, country, asn, estimated_type";

/** Digits of the largest int4 id (2147483647). */
const ID_WIDTH = 10;
const MAX_ID = 2 ** 31 - 1;
const TAB = 9;
const NEWLINE = 10;
const DOT = 46;
const ZERO = 48;
const NULL_FIELD = Buffer.from("\\N");
const SPECIAL = /[\\\t\n\r]/;

/** COPY escapes for backslash, tab, newline and carriage return. */
function escapeText(value: string): string {
  return value.replace(/[\\\t\n\r]/g, (c) => (c === "\\" ? "\\\\" : c === "\t" ? "\\t" : c === "\n" ? "\\n" : "\\r"));
}

/** One row's values; `ip` is the address as an unsigned 32-bit number. */
export interface ProxyCopyRow {
  ip: number;
  port: number;
  username: string;
  password: string;
  schemeHint: string | null;
  country: string;
  asn: number | null;
  estimatedType: string;
}

export class ProxyCopyText {
  private buffer: Buffer;
  private used = 0;
  /** Byte offset where each row starts. */
  private starts: number[] = [];
  private readonly userIdField: Buffer;

  constructor(userId: number, expectedRows = 0) {
    this.userIdField = Buffer.from(`\t${userId}\t`);
    this.buffer = Buffer.allocUnsafe(Math.max(256, expectedRows * 80));
  }

  get rows(): number {
    return this.starts.length;
  }

  add(row: ProxyCopyRow): void {
    const { username, password } = row;
    // Worst case: every UTF-16 unit as 3 bytes, doubled by escaping, plus the fixed fields.
    this.reserve(128 + 6 * (username.length + password.length + row.country.length + row.estimatedType.length + (row.schemeHint?.length ?? 0)));
    const buf = this.buffer;
    this.starts.push(this.used);
    // The id field is left for withIds to write.
    let at = this.used + ID_WIDTH;
    at += this.userIdField.copy(buf, at);
    const ip = row.ip;
    at = writeOctet(buf, at, (ip >>> 24) & 255);
    buf[at++] = DOT;
    at = writeOctet(buf, at, (ip >>> 16) & 255);
    buf[at++] = DOT;
    at = writeOctet(buf, at, (ip >>> 8) & 255);
    buf[at++] = DOT;
    at = writeOctet(buf, at, ip & 255);
    buf[at++] = TAB;
    at = writeUint(buf, at, row.port);
    buf[at++] = TAB;
    at = this.writeText(at, username);
    buf[at++] = TAB;
    at = this.writeText(at, password);
    buf[at++] = TAB;
    at = row.schemeHint === null ? at + NULL_FIELD.copy(buf, at) : this.writeText(at, row.schemeHint);
    buf[at++] = TAB;
    at = this.writeText(at, row.country);
    buf[at++] = TAB;
    at = row.asn === null ? at + NULL_FIELD.copy(buf, at) : writeUint(buf, at, row.asn);
    buf[at++] = TAB;
    at = this.writeText(at, row.estimatedType);
    buf[at++] = NEWLINE;
    this.used = at;
  }

  /** A copy with only the rows whose position (0-based) passes `keep`. */
  filter(keep: (position: number) => boolean): ProxyCopyText {
    const kept = new ProxyCopyText(0);
    const parts: Buffer[] = [];
    let used = 0;
    for (let position = 0; position < this.starts.length; position++) {
      if (!keep(position)) continue;
      const start = this.starts[position] ?? 0;
      const end = this.starts[position + 1] ?? this.used;
      kept.starts.push(used);
      parts.push(this.buffer.subarray(start, end));
      used += end - start;
    }
    kept.buffer = Buffer.concat(parts, used);
    kept.used = used;
    return kept;
  }

  /** The rows with their ids filled in (`ids[i]` for row i), ready to send. */
  withIds(ids: ArrayLike<number>): Buffer {
    if (ids.length !== this.starts.length) throw new Error(`expected ${this.starts.length} ids, got ${ids.length}`);
    const buf = this.buffer;
    for (let i = 0; i < ids.length; i++) {
      let id = ids[i] ?? 0;
      if (!Number.isInteger(id) || id < 1 || id > MAX_ID) throw new Error(`proxy id out of range: ${id}`);
      const start = this.starts[i] ?? 0;
      // All ten digits, right to left: leading zeros once the number runs out.
      for (let at = start + ID_WIDTH - 1; at >= start; at--) {
        buf[at] = ZERO + (id % 10);
        id = Math.floor(id / 10);
      }
    }
    return buf.subarray(0, this.used);
  }

  private writeText(at: number, value: string): number {
    // Printable ASCII (nearly every value) byte by byte: cheaper than a call into Buffer#write for a few bytes.
    const buf = this.buffer;
    const length = value.length;
    let i = 0;
    for (; i < length; i++) {
      const code = value.charCodeAt(i);
      if (code < 0x20 || code > 0x7e || code === 0x5c) break;
      buf[at + i] = code;
    }
    if (i === length) return at + length;
    const rest = value.slice(i);
    return at + i + buf.write(SPECIAL.test(rest) ? escapeText(rest) : rest, at + i, "utf8");
  }

  private reserve(bytes: number): void {
    if (this.used + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.used + bytes));
    this.buffer.copy(grown, 0, 0, this.used);
    this.buffer = grown;
  }
}

/** The digits of 0-255, four bytes each: how many, then the digits. */
const OCTETS = new Uint8Array(256 * 4);
for (let n = 0; n < 256; n++) {
  const text = String(n);
  OCTETS[n * 4] = text.length;
  for (let i = 0; i < text.length; i++) OCTETS[n * 4 + 1 + i] = text.charCodeAt(i);
}

/** Writes an address byte's digits at `at` from the table (no divisions, unlike writeUint); returns the offset after them. */
function writeOctet(buf: Buffer, at: number, value: number): number {
  const base = value * 4;
  const count = OCTETS[base] ?? 0;
  let to = at;
  for (let i = 1; i <= count; i++) buf[to++] = OCTETS[base + i] ?? ZERO;
  return to;
}

/** Writes a non-negative integer's decimal digits at `at`; returns the offset after them. */
function writeUint(buf: Buffer, at: number, value: number): number {
  let digits = 1;
  for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  let rest = value;
  for (let i = at + digits - 1; i >= at; i--) {
    buf[i] = ZERO + (rest % 10);
    rest = Math.floor(rest / 10);
  }
  return at + digits;
}
