import { StringDecoder } from "node:string_decoder";

/** Characters of one line we look at; the rest of a longer line is skipped unread. */
export const DEFAULT_MAX_LINE_LENGTH = 4096;

export interface SplitLine {
  /** The line without its break (`\r` included: callers trim). At most the cap for an overlong line. */
  text: string;
  /** The line was longer than the cap; `text` is its beginning. */
  overlong: boolean;
  /** Only for overlong lines: nothing but whitespace in the whole line. */
  blank: boolean;
}

const NON_SPACE = /\S/;

/**
 * Splits a byte stream into lines with bounded memory: UTF-8 characters that
 * straddle chunks are reassembled, and a line longer than `maxLineLength`
 * keeps only its first `maxLineLength` characters while the rest is skipped
 * as it arrives (a 1 MiB line costs 4 KiB).
 */
export class LineSplitter {
  private readonly decoder = new StringDecoder("utf8");
  private pending = "";
  private overlong = false;
  private blank = true;

  constructor(private readonly maxLineLength = DEFAULT_MAX_LINE_LENGTH) {}

  /** Feeds a chunk; `onLine` runs for every line it completes. */
  push(chunk: Buffer | string, onLine: (line: SplitLine) => void): void {
    const text = typeof chunk === "string" ? chunk : this.decoder.write(chunk);
    let start = 0;
    for (;;) {
      const newline = text.indexOf("\n", start);
      if (newline < 0) {
        if (start < text.length) this.append(start === 0 ? text : text.slice(start));
        return;
      }
      if (newline > start) this.append(text.slice(start, newline));
      this.emit(onLine);
      start = newline + 1;
    }
  }

  /** Flushes the last line (a file need not end with a newline). */
  end(onLine: (line: SplitLine) => void): void {
    const rest = this.decoder.end();
    if (rest) this.append(rest);
    if (this.pending !== "" || this.overlong) this.emit(onLine);
  }

  private append(segment: string): void {
    if (this.overlong) {
      if (this.blank && NON_SPACE.test(segment)) this.blank = false;
      return;
    }
    this.pending += segment;
    if (this.pending.length > this.maxLineLength) {
      this.overlong = true;
      this.blank = !NON_SPACE.test(this.pending);
      this.pending = this.pending.slice(0, this.maxLineLength);
    }
  }

  private emit(onLine: (line: SplitLine) => void): void {
    const line: SplitLine = { text: this.pending, overlong: this.overlong, blank: this.overlong && this.blank };
    this.pending = "";
    this.overlong = false;
    this.blank = true;
    onLine(line);
  }
}
