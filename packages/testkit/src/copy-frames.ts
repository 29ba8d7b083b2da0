import { ByteWriter, CopyOutParser, type CopyRowWriter } from "@roost/db";

/** One backend message: its type, then a 4-byte big-endian length that counts itself, then the body. */
export function message(type: string, body: Buffer | string = Buffer.alloc(0)): Buffer {
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  const header = Buffer.alloc(5);
  header.write(type, 0, "latin1");
  header.writeUInt32BE(bytes.length + 4, 1);
  return Buffer.concat([header, bytes]);
}

/** CopyOutResponse for `columns` text columns. */
export const copyOutResponse = (columns: number): Buffer => {
  const body = Buffer.alloc(3 + 2 * columns);
  body.writeUInt16BE(columns, 1);
  return message("H", body);
};

/** The bytes after CopyDone: CommandComplete and ReadyForQuery (idle). */
export const copyTail = (rows: number): Buffer => Buffer.concat([message("C", `COPY ${rows}\0`), message("Z", "I")]);

/**
 * What the server sends for a COPY TO whose text output is `text` (rows
 * ended by raw newlines): CopyOutResponse, a CopyData per row, CopyDone,
 * CommandComplete and ReadyForQuery.
 */
export function copyOutStream(text: Buffer): Buffer {
  const rows: Buffer[] = [];
  for (let from = 0; from < text.length; ) {
    const end = text.indexOf(10, from);
    const to = end === -1 ? text.length : end + 1;
    rows.push(message("d", text.subarray(from, to)));
    from = to;
  }
  return Buffer.concat([copyOutResponse(1), ...rows, message("c"), copyTail(rows.length)]);
}

/**
 * A writer's whole output for the COPY text `text`, the server's messages
 * for it fed to a CopyOutParser in the pieces `cuts` makes (offsets into
 * the messages); `rest` is what the parser handed back after the COPY.
 */
export function written(writer: CopyRowWriter, text: Buffer, cuts: readonly number[]): { text: string; rest: Buffer } {
  const stream = copyOutStream(text);
  const parser = new CopyOutParser(writer);
  const out = [writer.begin()];
  let rest: Buffer | null = null;
  let from = 0;
  for (const cut of [...cuts, stream.length]) {
    if (rest !== null) {
      rest = Buffer.concat([rest, stream.subarray(from, cut)]);
    } else {
      const fed = parser.feed(stream.subarray(from, cut));
      out.push(fed.out);
      rest = fed.rest;
    }
    from = cut;
  }
  out.push(writer.end());
  return { text: Buffer.concat(out).toString("utf8"), rest: rest ?? Buffer.alloc(0) };
}

/** A writer that records each row's bytes. */
export class RecordingWriter implements CopyRowWriter {
  readonly seen: string[] = [];
  readonly expansion = 1;
  get rows(): number {
    return this.seen.length;
  }
  begin(): Buffer {
    return Buffer.alloc(0);
  }
  row(out: ByteWriter, data: Buffer, from: number, to: number): void {
    this.seen.push(data.toString("utf8", from, to));
    out.slice(data, from, to);
  }
  end(): Buffer {
    return Buffer.alloc(0);
  }
}
