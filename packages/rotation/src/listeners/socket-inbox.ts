import type net from "node:net";

/**
 * Pull-based reads from a socket: the socket stays paused while a chunk waits,
 * so a slow destination slows the source (backpressure) without buffering.
 */
export class SocketInbox {
  private readonly chunks: Buffer[] = [];
  private ended = false;
  private wake: (() => void) | undefined;

  constructor(private readonly socket: net.Socket) {
    socket.on("data", this.onData);
    socket.on("end", this.onEnd);
    socket.on("close", this.onEnd);
    socket.on("error", this.onEnd);
    socket.pause();
  }

  private readonly onData = (chunk: Buffer): void => {
    this.chunks.push(chunk);
    this.socket.pause();
    this.wake?.();
  };

  private readonly onEnd = (): void => {
    this.ended = true;
    this.wake?.();
  };

  /** The next chunk, or null once the peer ended or the socket closed. */
  async next(): Promise<Buffer | null> {
    for (;;) {
      const chunk = this.chunks.shift();
      if (chunk) return chunk;
      if (this.ended) return null;
      this.socket.resume();
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }

  unshift(chunk: Buffer): void {
    if (chunk.length > 0) this.chunks.unshift(chunk);
  }

  /** True when a chunk is waiting to be taken. */
  get hasBuffered(): boolean {
    return this.chunks.length > 0;
  }

  /** True when nothing is buffered and the peer has not ended (an idle kept-alive connection). */
  get idle(): boolean {
    return this.chunks.length === 0 && !this.ended && !this.socket.destroyed;
  }

  /** Stops reading; returns what was buffered (for a tunnel that pipes the socket from here on). */
  detach(): Buffer {
    this.socket.off("data", this.onData);
    this.socket.off("end", this.onEnd);
    this.socket.off("close", this.onEnd);
    this.socket.off("error", this.onEnd);
    return Buffer.concat(this.chunks.splice(0));
  }
}

const HEAD_END = Buffer.from("\r\n\r\n");

export class HeadTooLargeError extends Error {}

/** Reads up to the blank line; null when the peer closed before any byte of a head. */
export async function readHead(inbox: SocketInbox, maxBytes: number): Promise<Buffer | null> {
  let head: Buffer = Buffer.alloc(0);
  for (;;) {
    const chunk = await inbox.next();
    if (!chunk) {
      if (head.length === 0) return null;
      throw new Error("connection closed inside a message head");
    }
    const searchFrom = Math.max(0, head.length - 3);
    head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
    const end = head.indexOf(HEAD_END, searchFrom);
    if (end !== -1) {
      inbox.unshift(head.subarray(end + HEAD_END.length));
      return head.subarray(0, end);
    }
    if (head.length > maxBytes) throw new HeadTooLargeError("message head too large");
  }
}

const WRITTEN = Promise.resolve();

/**
 * Writes (`data` and `more` in one system call) and waits for 'drain' when the socket's buffer is full.
 * Not an async function: a write the socket took at once returns a settled promise, not a new one.
 */
export function writeAll(socket: net.Socket, data: Buffer | string, more?: Buffer): Promise<void> {
  if (socket.destroyed) return Promise.reject(new Error("socket closed"));
  let flowing: boolean;
  if (more) {
    socket.cork();
    socket.write(data);
    flowing = socket.write(more);
    socket.uncork();
  } else {
    flowing = socket.write(data);
  }
  if (flowing) return WRITTEN;
  return new Promise<void>((resolve, reject) => {
    const done = (): void => {
      socket.off("drain", done);
      socket.off("close", closed);
      resolve();
    };
    const closed = (): void => {
      socket.off("drain", done);
      reject(new Error("socket closed"));
    };
    socket.once("drain", done);
    socket.once("close", closed);
  });
}
