import type { Duplex } from "node:stream";
import type { Connection, Submittable } from "pg";
import { ByteWriter } from "./byte-writer.js";

/**
 * Reads a `COPY ... TO STDOUT` (text format) off the connection's socket and hands each row to a writer
 * as a span of the bytes read, with no Buffer or string per row. The server sends CopyOutResponse, one
 * CopyData per row (text and newline), then CopyDone; each message is a type byte and a self-counting 4-byte big-endian length.
 */

/** Turns the rows of a COPY into the bytes sent for them. */
export interface CopyRowWriter {
  /** Rows written so far. */
  readonly rows: number;
  /** Output bytes per COPY byte, at most, for rows that take the plain path (sizes each read's buffer; a row may grow it). */
  readonly expansion: number;
  /** Bytes before the first row. */
  begin(): Buffer;
  /** One row: bytes from..to of `data`, without its newline. */
  row(out: ByteWriter, data: Buffer, from: number, to: number): void;
  /** Bytes after the last row. */
  end(): Buffer;
}

export class CopyOutError extends Error {
  override readonly name = "CopyOutError";
}

const COPY_DATA = 0x64; // d
const COPY_DONE = 0x63; // c
const COPY_OUT_RESPONSE = 0x48; // H
const NOTICE = 0x4e; // N
const PARAMETER_STATUS = 0x53; // S
const NOTIFICATION = 0x41; // A
const NEWLINE = 10;
const HEADER = 5;

/** Messages that may come between a CopyOutResponse and the CopyDone and mean nothing to the export. */
const skipped = (code: number): boolean => code === COPY_OUT_RESPONSE || code === NOTICE || code === PARAMETER_STATUS || code === NOTIFICATION;

/** A message's length after its type byte (the length field counts itself, so at least 4). */
function messageLength(data: Buffer, at: number): number {
  const length = data.readUInt32BE(at + 1);
  if (length < 4) throw new CopyOutError(`malformed message from the server (length ${length})`);
  return length;
}

/** What `feed` made of a read: bytes to send, and once the COPY is over, the bytes after it (for the driver). */
export interface Fed {
  out: Buffer;
  /** Set once CopyDone was read or a message that ends the COPY (an ErrorResponse, say) begins: the bytes from there on. */
  rest: Buffer | null;
}

/**
 * The protocol part, on bytes alone (no socket): `feed` each read in turn.
 * A message may be split between reads anywhere, its header included.
 */
export class CopyOutParser {
  /** The unfinished message at the end of the last read (header and all). */
  private pending: Buffer | null = null;
  private done = false;

  constructor(private readonly writer: CopyRowWriter) {}

  feed(chunk: Buffer): Fed {
    if (this.done) throw new CopyOutError("COPY output read after its end");
    const out = new ByteWriter(chunk.length * this.writer.expansion + 256);
    let at = 0;
    const pending = this.pending;
    if (pending !== null) {
      const whole = this.completed(pending, chunk);
      if (whole === null) {
        this.pending = Buffer.concat([pending, chunk]);
        return { out: out.written(), rest: null };
      }
      this.pending = null;
      at = whole.length - pending.length;
      const ended = this.message(out, whole, 0);
      if (ended !== -1) return this.finish(out, Buffer.concat([whole.subarray(ended), chunk.subarray(at)]));
    }
    const length = chunk.length;
    while (at + HEADER <= length) {
      const end = at + 1 + messageLength(chunk, at);
      if (end > length) break;
      const ended = this.message(out, chunk, at);
      if (ended !== -1) return this.finish(out, chunk.subarray(ended));
      at = end;
    }
    if (at < length) this.pending = Buffer.from(chunk.subarray(at));
    return { out: out.written(), rest: null };
  }

  /**
   * The whole message at `at` (all in `data`). Returns -1 while the COPY goes on, else where the
   * driver's bytes start: after a CopyDone, or at an unexpected message such as an ErrorResponse.
   */
  private message(out: ByteWriter, data: Buffer, at: number): number {
    const code = data[at] ?? 0;
    const end = at + 1 + messageLength(data, at);
    if (code === COPY_DATA) {
      const to = end > at + HEADER && data[end - 1] === NEWLINE ? end - 1 : end;
      this.writer.row(out, data, at + HEADER, to);
      return -1;
    }
    if (skipped(code)) return -1;
    return code === COPY_DONE ? end : at;
  }

  /** The pending message completed from the head of `chunk`, or null if the chunk does not complete it. */
  private completed(pending: Buffer, chunk: Buffer): Buffer | null {
    const headerMissing = Math.max(0, HEADER - pending.length);
    if (headerMissing > chunk.length) return null;
    const header = headerMissing === 0 ? pending : Buffer.concat([pending, chunk.subarray(0, headerMissing)]);
    const missing = 1 + messageLength(header, 0) - pending.length;
    if (missing > chunk.length) return null;
    return Buffer.concat([pending, chunk.subarray(0, missing)]);
  }

  private finish(out: ByteWriter, rest: Buffer): Fed {
    this.done = true;
    this.pending = null;
    return { out: out.written(), rest };
  }
}

type DataListener = (chunk: Buffer) => void;

/**
 * A `COPY ... TO STDOUT` as a pg query object (`client.query(copy)`), read with `read()`: the socket is
 * read only when asked, so PostgreSQL waits for the caller. During the COPY the socket's data goes to the
 * CopyOutParser; from its end (CopyDone or an error) on, the driver reads it and finishes the query.
 */
export class CopyOutQuery implements Submittable {
  /** The driver's client-side deadline for this query (pg reads it off the query object); unset: the pool's. */
  query_timeout?: number;
  /** Set by the driver when it times the query: called once the query ends, so its timer stops. */
  callback?: (error: Error | null) => void;
  private readonly parser: CopyOutParser;
  private socket: Duplex | null = null;
  private driverData: DataListener | null = null;
  private failure: Error | null = null;
  private copyEnded = false;
  private completed = false;
  /** The reader waiting for the socket, the driver, or an error. */
  private wake: (() => void) | null = null;
  private readonly onReadable = (): void => this.notify();

  constructor(
    private readonly text: string,
    writer: CopyRowWriter,
  ) {
    this.parser = new CopyOutParser(writer);
  }

  /** Called by the driver when the query's turn comes. */
  submit(connection: Pick<Connection, "stream" | "query">): Error | undefined {
    const socket = connection.stream;
    const listeners = socket.listeners("data");
    if (listeners.length !== 1) return new CopyOutError(`expected the driver's one data listener on the socket, found ${listeners.length}`);
    this.driverData = listeners[0] as DataListener;
    socket.removeListener("data", this.driverData);
    socket.pause();
    socket.on("readable", this.onReadable);
    this.socket = socket;
    connection.query(this.text);
    this.notify();
    return undefined;
  }

  handleError(error: Error): void {
    this.failure ??= error;
    this.notify();
  }

  handleCommandComplete(): void {}

  // A statement that is not a COPY TO alone reaches the driver's handlers: the query fails, and the
  // connection stays usable (the driver reads on to ReadyForQuery).
  handleRowDescription(): void {
    this.handleError(new CopyOutError("the statement is not a COPY TO"));
  }

  handleDataRow(): void {}

  handleCopyData(): void {
    this.handleError(new CopyOutError("COPY TO after another statement in the same query"));
  }

  handleEmptyQuery(): void {
    this.handleError(new CopyOutError("the statement is empty"));
  }

  handleCopyInResponse(connection: { sendCopyFail(message: string): void }): void {
    this.handleError(new CopyOutError("the statement is a COPY FROM"));
    connection.sendCopyFail("not a COPY TO");
  }

  handleReadyForQuery(): void {
    this.completed = true;
    this.callback?.(this.failure);
    this.notify();
  }

  /**
   * The next bytes to send (never empty), or null once the COPY has ended
   * and the connection is ready for the next query. Throws the query's
   * error (PostgreSQL's, or the connection's).
   */
  async read(): Promise<Buffer | null> {
    for (;;) {
      if (this.failure) throw this.failure;
      if (this.copyEnded) {
        if (this.completed) return null;
        await this.waitForWake();
        continue;
      }
      const chunk = (this.socket?.read() as Buffer | null | undefined) ?? null;
      if (chunk === null) {
        await this.waitForWake();
        continue;
      }
      const fed = this.parser.feed(chunk);
      if (fed.rest !== null) this.handBack(fed.rest);
      if (fed.out.length > 0) return fed.out;
    }
  }

  /**
   * Ends the query when the caller stops reading early: the socket is destroyed, so the driver fails
   * the unawaited query and the backend's COPY ends. Do not reuse the client (release it with an error).
   */
  abandon(): void {
    this.failure ??= new CopyOutError("COPY abandoned by its reader");
    this.callback?.(this.failure);
    this.socket?.destroy();
    this.notify();
  }

  /** From here on the driver reads the socket: the bytes after the COPY first. */
  private handBack(rest: Buffer): void {
    this.copyEnded = true;
    const socket = this.socket;
    const driverData = this.driverData;
    if (socket === null || driverData === null) return;
    socket.removeListener("readable", this.onReadable);
    socket.on("data", driverData);
    if (rest.length > 0) driverData(rest);
    // The driver's handler may pause the socket itself; resume after it has run.
    process.nextTick(() => socket.resume());
  }

  private waitForWake(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
    });
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}
