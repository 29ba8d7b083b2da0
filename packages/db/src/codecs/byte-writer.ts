/**
 * A growable output buffer for bodies written byte by byte from PostgreSQL's row text (the list
 * page and the csv and json exports). One buffer avoids a string per field and per row, and
 * encoding the whole body again when it is sent.
 */

/** The bytes of an ASCII text. */
export const ascii = (text: string): Uint8Array => Uint8Array.from(text, (c) => c.charCodeAt(0));

const MINUS = 45;
const DOT = 46;
const ZERO = 48;
const NINE = 57;

/** The character code (or byte) at `i`. */
const codeAt = (text: string | Uint8Array, i: number): number => (typeof text === "string" ? text.charCodeAt(i) : (text[i] ?? 0));

/**
 * `-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?` and not `-0`: PostgreSQL's text for such a number is what
 * JSON.stringify (and String) write for parseFloat of it, so it can be copied as it is. `text` is a
 * string or its bytes.
 */
export function plainDecimal(text: string | Uint8Array, from: number, to: number): boolean {
  let i = from;
  if (codeAt(text, i) === MINUS) i++;
  const digits = i;
  if (i >= to) return false;
  const first = codeAt(text, i);
  if (first === ZERO) i++;
  else {
    while (i < to && codeAt(text, i) >= ZERO && codeAt(text, i) <= NINE) i++;
    if (i === digits) return false;
  }
  if (i === to) return !(first === ZERO && digits > from); // "-0" is written 0
  if (codeAt(text, i) !== DOT) return false;
  i++;
  const fraction = i;
  while (i < to && codeAt(text, i) >= ZERO && codeAt(text, i) <= NINE) i++;
  return i === to && i > fraction && codeAt(text, to - 1) !== ZERO;
}

export class ByteWriter {
  buffer: Buffer;
  at = 0;

  constructor(capacity: number) {
    this.buffer = Buffer.allocUnsafe(Math.max(Math.ceil(capacity), 64));
  }

  room(bytes: number): void {
    if (this.at + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.at + bytes));
    this.buffer.copy(grown, 0, 0, this.at);
    this.buffer = grown;
  }

  byte(value: number): void {
    this.room(1);
    this.buffer[this.at++] = value;
  }

  bytes(source: Uint8Array): void {
    this.room(source.length);
    const buffer = this.buffer;
    let at = this.at;
    for (let i = 0; i < source.length; i++) buffer[at++] = source[i] ?? 0;
    this.at = at;
  }

  /** Bytes from..to of `source` (short runs: a loop beats a native copy call). */
  slice(source: Uint8Array, from: number, to: number): void {
    this.room(to - from);
    const buffer = this.buffer;
    let at = this.at;
    for (let i = from; i < to; i++) buffer[at++] = source[i] ?? 0;
    this.at = at;
  }

  /** Characters from..to of `text`, known to be ASCII. */
  chars(text: string, from: number, to: number): void {
    this.room(to - from);
    const buffer = this.buffer;
    let at = this.at;
    for (let i = from; i < to; i++) buffer[at++] = text.charCodeAt(i);
    this.at = at;
  }

  utf8(text: string): void {
    this.room(Buffer.byteLength(text));
    this.at += this.buffer.write(text, this.at, "utf8");
  }

  /** What was written (a view of the buffer: write nothing more after taking it). */
  written(): Buffer {
    return this.buffer.subarray(0, this.at);
  }
}
