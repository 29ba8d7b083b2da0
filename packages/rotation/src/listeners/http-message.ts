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
  return requestFramingOf(framingHeader(head, "transfer-encoding"), framingHeader(head, "content-length"));
}

function requestFramingOf(te: string | undefined | null, cl: string | undefined | null): BodyFraming | undefined {
  if (te === null || cl === null) return undefined;
  if (te !== undefined) return te.toLowerCase().endsWith("chunked") && cl === undefined ? { kind: "chunked" } : undefined;
  if (cl === undefined) return { kind: "none" };
  return /^\d{1,15}$/.test(cl) ? { kind: "length", bytes: Number(cl) } : undefined;
}

/** Response body framing: none for HEAD, 1xx, 204 and 304; else like a request, or until close. */
export function responseFraming(head: HttpHead, requestMethod: string): BodyFraming | undefined {
  return framingOf(head.startLine[1], requestMethod, framingHeader(head, "transfer-encoding"), framingHeader(head, "content-length"));
}

function framingOf(statusText: string, requestMethod: string, te: string | undefined | null, cl: string | undefined | null): BodyFraming | undefined {
  const status = Number(statusText);
  if (requestMethod === "HEAD" || (status >= 100 && status < 200) || status === 204 || status === 304) return { kind: "none" };
  if (te === null || cl === null) return undefined;
  if (te !== undefined) return te.toLowerCase().endsWith("chunked") ? { kind: "chunked" } : { kind: "until-close" };
  if (cl === undefined) return { kind: "until-close" };
  return /^\d{1,15}$/.test(cl) ? { kind: "length", bytes: Number(cl) } : undefined;
}

/**
 * A response head as the relay needs it. Most heads are read by `scanResponseHead`
 * without a header list: their lines are already in the form the relay would
 * write, so the client's copy is the upstream's bytes minus the hop-by-hop lines.
 * Any other head (1xx, HTTP/1.0, odd whitespace, Connection naming other fields)
 * is parsed and rebuilt as before (`parsed`).
 */
export interface ResponseHead {
  version: string;
  status: string;
  reason: string;
  /** The first Connection value. */
  connection: string | undefined;
  /** Undefined when absent, null when repeated. */
  transferEncoding: string | undefined | null;
  contentLength: string | undefined | null;
  parsed: HttpHead | undefined;
  raw: Buffer;
  /** Byte ranges of `raw` left out of the client's copy, as start, end pairs in order. */
  dropped: number[];
}

const isSpace = (code: number): boolean => code === 32 || (code >= 9 && code <= 13) || code === 160;

/** Reads a response head; undefined when it is malformed (as parseHead). */
export function scanResponseHead(raw: Buffer): ResponseHead | undefined {
  const scanned = scanCanonical(raw);
  if (scanned) return scanned;
  const head = parseHead(raw);
  if (!head) return undefined;
  const [version, status, reason] = head.startLine;
  const connection = headerValue(head, "connection");
  return { version, status, reason, connection, transferEncoding: framingHeader(head, "transfer-encoding"), contentLength: framingHeader(head, "content-length"), parsed: head, raw, dropped: [] };
}

/** What one scan of a head's field lines finds; see scanFields. */
interface ScannedFields {
  /** The first Connection value. */
  connection: string | undefined;
  transferEncoding: string | undefined | null;
  contentLength: string | undefined | null;
  /** The first Proxy-Authorization value (requests). */
  proxyAuthorization: string | undefined;
  hasHost: boolean;
  dropped: number[];
}

/**
 * The field lines of a head from `start`, read without a header list when every
 * line is "Name: value" exactly as parseHead + serializeHead would write it (a
 * name and value without surrounding whitespace, one space after the colon).
 * Undefined for anything else, and for a request with Expect (its own path).
 */
function scanFields(text: string, start: number, request: boolean): ScannedFields | undefined {
  const length = text.length;
  const fields: ScannedFields = { connection: undefined, transferEncoding: undefined, contentLength: undefined, proxyAuthorization: undefined, hasHost: false, dropped: [] };
  while (start < length) {
    let end = text.indexOf("\r\n", start);
    if (end === -1) end = length;
    const colon = text.indexOf(":", start);
    if (colon <= start || colon >= end || text.charCodeAt(colon + 1) !== 32) return undefined;
    const first = text.charCodeAt(start);
    if (isSpace(first) || isSpace(text.charCodeAt(colon - 1)) || (end > colon + 2 && (isSpace(text.charCodeAt(colon + 2)) || isSpace(text.charCodeAt(end - 1))))) return undefined;
    // Only names starting with c, k, p, t or u are framing or hop-by-hop ones; e and h matter in requests.
    const lower = first | 0x20;
    if (lower === 0x63 || lower === 0x6b || lower === 0x70 || lower === 0x74 || lower === 0x75 || (request && (lower === 0x65 || lower === 0x68))) {
      const name = text.slice(start, colon).toLowerCase();
      if (name === "content-length") fields.contentLength = fields.contentLength === undefined ? text.slice(colon + 2, end) : null;
      else if (name === "transfer-encoding") fields.transferEncoding = fields.transferEncoding === undefined ? text.slice(colon + 2, end) : null;
      else if (name === "host") fields.hasHost = true;
      else if (name === "close" || name === "expect") return undefined;
      else if (HOP_BY_HOP.has(name)) {
        if (name === "connection") {
          const value = text.slice(colon + 2, end);
          fields.connection ??= value;
          for (const token of value.split(",")) {
            const field = token.trim().toLowerCase();
            // A field Connection names besides these needs the parsed path.
            if (field !== "" && field !== "close" && field !== "transfer-encoding" && !HOP_BY_HOP.has(field)) return undefined;
          }
        } else if (name === "proxy-authorization") fields.proxyAuthorization ??= text.slice(colon + 2, end);
        // Each line goes with the CRLF before it (the head's last line has none after it).
        fields.dropped.push(start - 2, end);
      }
    }
    start = end + 2;
  }
  return fields;
}

/** The byte-range read of a response: an HTTP/1.1 head, not 1xx, with canonical field lines. */
function scanCanonical(raw: Buffer): ResponseHead | undefined {
  const text = raw.toString("latin1");
  let lineEnd = text.indexOf("\r\n");
  if (lineEnd === -1) lineEnd = text.length;
  const firstSpace = text.indexOf(" ");
  const secondSpace = text.indexOf(" ", firstSpace + 1);
  if (firstSpace !== 8 || secondSpace === -1 || secondSpace >= lineEnd || !text.startsWith("HTTP/1.1") || text.charCodeAt(9) === 0x31) return undefined;
  const fields = scanFields(text, lineEnd + 2, false);
  if (!fields) return undefined;
  const { connection, transferEncoding, contentLength, dropped } = fields;
  return { version: "HTTP/1.1", status: text.slice(firstSpace + 1, secondSpace), reason: text.slice(secondSpace + 1, lineEnd), connection, transferEncoding, contentLength, parsed: undefined, raw, dropped };
}

export function responseHeadFraming(head: ResponseHead, requestMethod: string): BodyFraming | undefined {
  return framingOf(head.status, requestMethod, head.transferEncoding, head.contentLength);
}

const HEAD_TAIL = Buffer.from("\r\n\r\n", "latin1");
const HEAD_TAIL_CLOSE = Buffer.from("\r\nConnection: close\r\n\r\n", "latin1");

/** `raw` without the `dropped` ranges, then `tail`. */
function copyWithout(raw: Buffer, dropped: readonly number[], tail: Buffer): Buffer {
  let size = raw.length + tail.length;
  for (let i = 0; i < dropped.length; i += 2) size -= (dropped[i + 1] ?? 0) - (dropped[i] ?? 0);
  const out = Buffer.allocUnsafe(size);
  let from = 0;
  let at = 0;
  for (let i = 0; i < dropped.length; i += 2) {
    at += raw.copy(out, at, from, dropped[i]);
    from = dropped[i + 1] ?? raw.length;
  }
  at += raw.copy(out, at, from);
  tail.copy(out, at);
  return out;
}

/** The head the client gets: HTTP/1.1, end-to-end fields only, and `Connection: close` when `close`. */
export function clientResponseHead(head: ResponseHead, close: boolean): Buffer {
  if (head.parsed) {
    const headers = endToEnd(head.parsed);
    if (close) headers.push(["Connection", "close"]);
    return serializeHead(`HTTP/1.1 ${head.status} ${head.reason}`, headers);
  }
  return copyWithout(head.raw, head.dropped, close ? HEAD_TAIL_CLOSE : HEAD_TAIL);
}

/**
 * A client's request head as the listener needs it, read like a response head:
 * an HTTP/1.1 head with canonical field lines and no Expect by byte ranges,
 * any other parsed (`parsed`).
 */
export interface RequestHead {
  method: string;
  target: string;
  version: string;
  /** The first Connection value. */
  connection: string | undefined;
  proxyAuthorization: string | undefined;
  hasHost: boolean;
  /** Undefined when absent, null when repeated. */
  transferEncoding: string | undefined | null;
  contentLength: string | undefined | null;
  parsed: HttpHead | undefined;
  raw: Buffer;
  /** Byte ranges of `raw` left out of the upstream's copy (hop-by-hop lines). */
  dropped: number[];
}

/** Reads a request head; undefined when it is malformed (as parseHead). */
export function scanRequestHead(raw: Buffer): RequestHead | undefined {
  const text = raw.toString("latin1");
  let lineEnd = text.indexOf("\r\n");
  if (lineEnd === -1) lineEnd = text.length;
  const firstSpace = text.indexOf(" ");
  const secondSpace = text.indexOf(" ", firstSpace + 1);
  if (firstSpace > 0 && secondSpace > firstSpace + 1 && secondSpace === lineEnd - 9 && text.startsWith(" HTTP/1.1", secondSpace)) {
    const fields = scanFields(text, lineEnd + 2, true);
    if (fields) return { method: text.slice(0, firstSpace), target: text.slice(firstSpace + 1, secondSpace), version: "HTTP/1.1", ...fields, parsed: undefined, raw };
  }
  const head = parseHead(raw);
  if (!head) return undefined;
  const [method, target, version] = head.startLine;
  return {
    method,
    target,
    version,
    connection: headerValue(head, "connection"),
    proxyAuthorization: headerValue(head, "proxy-authorization"),
    hasHost: headerValue(head, "host") !== undefined,
    transferEncoding: framingHeader(head, "transfer-encoding"),
    contentLength: framingHeader(head, "content-length"),
    parsed: head,
    raw,
    dropped: [],
  };
}

export function requestHeadFraming(head: RequestHead): BodyFraming | undefined {
  return requestFramingOf(head.transferEncoding, head.contentLength);
}

/**
 * What an HTTP upstream gets for a byte-range head: the client's request line
 * and end-to-end lines, then Host when the client sent none and the upstream's
 * own Proxy-Authorization.
 */
export function upstreamRequestHead(head: RequestHead, host: string | undefined, authorization: string | undefined): Buffer {
  let tail = "";
  if (host !== undefined) tail += `\r\nHost: ${host}`;
  if (authorization !== undefined) tail += `\r\nProxy-Authorization: ${authorization}`;
  return copyWithout(head.raw, head.dropped, tail === "" ? HEAD_TAIL : Buffer.from(`${tail}\r\n\r\n`, "latin1"));
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
