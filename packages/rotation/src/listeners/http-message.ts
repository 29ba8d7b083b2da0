import type net from "node:net";

import { writeOrWait, type SocketInbox } from "./socket-inbox.js";

export interface HttpHead {
  /** Request: method, target, version. Response: version, status, reason. */
  startLine: [string, string, string];
  headers: [string, string][];
}

export function parseHead(head: Buffer): HttpHead | undefined {
  const lines = head.toString("latin1").split("\r\n");
  const first = lines[0] ?? "";
  const firstSpace = first.indexOf(" ");
  const secondSpace = first.indexOf(" ", firstSpace + 1);
  if (firstSpace <= 0) return undefined;
  const startLine: [string, string, string] =
    secondSpace === -1 ? [first.slice(0, firstSpace), first.slice(firstSpace + 1), ""] : [first.slice(0, firstSpace), first.slice(firstSpace + 1, secondSpace), first.slice(secondSpace + 1)];
  const headers: [string, string][] = [];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const colon = line.indexOf(":");
    // Obsolete line folding and header lines without a name are refused (request smuggling).
    if (colon <= 0 || line.startsWith(" ") || line.startsWith("\t")) return undefined;
    headers.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
  }
  return { startLine, headers };
}

export function headerValue(head: HttpHead, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const [key, value] of head.headers) if (key.toLowerCase() === lower) return value;
  return undefined;
}

// RFC 9110 7.6.1 hop-by-hop fields, plus the proxy credentials that are ours alone.
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer", "upgrade"]);

/**
 * The end-to-end headers of a message. Transfer-Encoding stays: the body is
 * relayed with its own framing, so its chunked coding must travel with it.
 */
export function endToEnd(head: HttpHead): [string, string][] {
  let dropped = HOP_BY_HOP;
  for (const [key, value] of head.headers) {
    if (key.toLowerCase() !== "connection") continue;
    // A copy only when Connection names more fields (the shared set is read per message).
    if (dropped === HOP_BY_HOP) dropped = new Set(HOP_BY_HOP);
    for (const token of value.split(",")) dropped.add(token.trim().toLowerCase());
    dropped.delete("transfer-encoding");
  }
  return head.headers.filter(([key]) => !dropped.has(key.toLowerCase()));
}

export function serializeHead(startLine: string, headers: readonly [string, string][]): Buffer {
  let text = `${startLine}\r\n`;
  for (const [key, value] of headers) text += `${key}: ${value}\r\n`;
  return Buffer.from(`${text}\r\n`, "latin1");
}

/**
 * The one value of a framing header: undefined when absent, null when the
 * head repeats it (refused: we would forward every copy, and a peer that reads
 * another one than we do would split the stream differently — smuggling).
 */
function framingHeader(head: HttpHead, name: string): string | undefined | null {
  let value: string | undefined;
  for (const [key, v] of head.headers) {
    if (key.toLowerCase() !== name) continue;
    if (value !== undefined) return null;
    value = v;
  }
  return value;
}

export type BodyFraming = { kind: "none" } | { kind: "length"; bytes: number } | { kind: "chunked" } | { kind: "until-close" };

/** Request body framing (RFC 9112 6.3): chunked wins, else Content-Length, else none. */
export function requestFraming(head: HttpHead): BodyFraming | undefined {
  const te = framingHeader(head, "transfer-encoding");
  const cl = framingHeader(head, "content-length");
  if (te === null || cl === null) return undefined;
  if (te !== undefined) return te.toLowerCase().endsWith("chunked") && cl === undefined ? { kind: "chunked" } : undefined;
  if (cl === undefined) return { kind: "none" };
  return /^\d{1,15}$/.test(cl) ? { kind: "length", bytes: Number(cl) } : undefined;
}

/** Response body framing: none for HEAD, 1xx, 204 and 304; else like a request, or until close. */
export function responseFraming(head: HttpHead, requestMethod: string): BodyFraming | undefined {
  const status = Number(head.startLine[1]);
  if (requestMethod === "HEAD" || (status >= 100 && status < 200) || status === 204 || status === 304) return { kind: "none" };
  const te = framingHeader(head, "transfer-encoding");
  const cl = framingHeader(head, "content-length");
  if (te === null || cl === null) return undefined;
  if (te !== undefined) return te.toLowerCase().endsWith("chunked") ? { kind: "chunked" } : { kind: "until-close" };
  if (cl === undefined) return { kind: "until-close" };
  return /^\d{1,15}$/.test(cl) ? { kind: "length", bytes: Number(cl) } : undefined;
}

/** Finds where a chunked body ends, chunk by chunk, without decoding it. */
export class ChunkedScanner {
  private state: "size" | "data" | "data-crlf" | "trailer" = "size";
  private line = "";
  private remaining = 0;
  done = false;

  /** Bytes of `chunk` that belong to the body (all, unless the body ends inside it). */
  scan(chunk: Buffer): number {
    let i = 0;
    while (i < chunk.length && !this.done) {
      if (this.state === "data") {
        const take = Math.min(this.remaining, chunk.length - i);
        i += take;
        this.remaining -= take;
        if (this.remaining === 0) this.state = "data-crlf";
        continue;
      }
      const byte = chunk[i++] ?? 0;
      if (byte !== 0x0a) {
        if (this.line.length > 4096) throw new Error("chunk line too long");
        if (byte !== 0x0d) this.line += String.fromCharCode(byte);
        continue;
      }
      const line = this.line;
      this.line = "";
      if (this.state === "data-crlf") {
        if (line !== "") throw new Error("bad chunk end");
        this.state = "size";
      } else if (this.state === "size") {
        const size = Number.parseInt(line.split(";")[0]?.trim() ?? "", 16);
        if (!Number.isFinite(size) || size < 0) throw new Error("bad chunk size");
        if (size === 0) this.state = "trailer";
        else {
          this.remaining = size;
          this.state = "data";
        }
      } else if (line === "") {
        this.done = true;
      }
    }
    return i;
  }
}

/**
 * Copies one body from `inbox` to `to` as framed and calls `done(complete)`
 * (false when the source closed early) or `fail`. Waits for the destination's
 * 'drain' before reading on (backpressure). `head` goes out first: with the
 * body's first chunk when that one is already buffered (one write instead of
 * two, a system call less per small response), else alone before waiting.
 */
export function relayBodyThen(inbox: SocketInbox, to: net.Socket, framing: BodyFraming, head: Buffer | undefined, done: (complete: boolean) => void, fail: (error: Error) => void): void {
  let pending = head;
  let remaining = framing.kind === "length" ? framing.bytes : 0;
  const scanner = framing.kind === "chunked" ? new ChunkedScanner() : undefined;
  const finished = (): boolean => framing.kind === "none" || (framing.kind === "length" && remaining === 0) || scanner?.done === true;
  const step = (): void => {
    for (;;) {
      if (finished()) {
        const first = pending;
        pending = undefined;
        if (!first || writeOrWait(to, first, undefined, () => done(true), fail)) done(true);
        return;
      }
      if (pending && !inbox.hasBuffered) {
        const first = pending;
        pending = undefined;
        if (!writeOrWait(to, first, undefined, step, fail)) return;
      }
      const chunk = inbox.take();
      if (chunk === undefined) return inbox.wait(step);
      // Nothing is pending here: it went out above before the source could report its end.
      if (chunk === null) return done(framing.kind === "until-close");
      let part = chunk;
      if (framing.kind === "length" && chunk.length > remaining) part = chunk.subarray(0, remaining);
      if (scanner) {
        let used: number;
        try {
          used = scanner.scan(chunk);
        } catch (error) {
          return fail(error as Error);
        }
        if (used < chunk.length) part = chunk.subarray(0, used);
      }
      if (part.length < chunk.length) inbox.unshift(chunk.subarray(part.length));
      remaining -= framing.kind === "length" ? part.length : 0;
      const first = pending;
      pending = undefined;
      if (!(first ? writeOrWait(to, first, part, step, fail) : writeOrWait(to, part, undefined, step, fail))) return;
    }
  };
  step();
}

/** relayBodyThen as a promise: false when the source closed early. */
export function relayBody(inbox: SocketInbox, to: net.Socket, framing: BodyFraming, head?: Buffer): Promise<boolean> {
  return new Promise((resolve, reject) => relayBodyThen(inbox, to, framing, head, resolve, reject));
}
