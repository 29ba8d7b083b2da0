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
    this.wakeUp();
  };

  private readonly onEnd = (): void => {
    this.ended = true;
    this.wakeUp();
  };

  /** Once per wait: a waiting callback may wait again from inside itself. */
  private wakeUp(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** The next chunk when one is buffered, null once the peer ended or the socket closed, undefined when none came yet (then `wait`). */
  take(): Buffer | null | undefined {
    const chunk = this.chunks.shift();
    if (chunk) return chunk;
    return this.ended ? null : undefined;
  }

  /** Reads on and calls `wake` once, when a chunk arrives or the peer ends; after `take` gave undefined. */
  wait(wake: () => void): void {
    this.socket.resume();
    this.wake = wake;
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
const EMPTY = Buffer.alloc(0);

export class HeadTooLargeError extends Error {}

/**
 * Reads up to the blank line and calls `done` with the head (null when the peer
 * closed before any byte of one), or `fail`; synchronously when it is buffered.
 */
export function readHeadThen(inbox: SocketInbox, maxBytes: number, done: (head: Buffer | null) => void, fail: (error: Error) => void): void {
  let head: Buffer = EMPTY;
  const step = (): void => {
    for (;;) {
      const chunk = inbox.take();
      if (chunk === undefined) return inbox.wait(step);
      if (chunk === null) return head.length === 0 ? done(null) : fail(new Error("connection closed inside a message head"));
      const searchFrom = Math.max(0, head.length - 3);
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const end = head.indexOf(HEAD_END, searchFrom);
      if (end !== -1) {
        inbox.unshift(head.subarray(end + HEAD_END.length));
        return done(head.subarray(0, end));
      }
      if (head.length > maxBytes) return fail(new HeadTooLargeError("message head too large"));
    }
  };
  step();
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

/**
 * writeAll for callback code: true when the socket took the data at once (go on
 * synchronously); otherwise `resume` follows its 'drain', or `fail`.
 */
export function writeOrWait(socket: net.Socket, data: Buffer | string, more: Buffer | undefined, resume: () => void, fail: (error: Error) => void): boolean {
  const written = writeAll(socket, data, more);
  if (written === WRITTEN) return true;
  written.then(() => {
    // `resume` runs outside the caller's stack: what it throws is its failure, not an unhandled rejection.
    try {
      resume();
    } catch (error) {
      fail(error as Error);
    }
  }, fail);
  return false;
}
