import type net from "node:net";

import { writeAll, type SocketInbox } from "./socket-inbox.js";

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
 * Copies one body from `inbox` to `to` as framed; returns false when the source closed early.
 * `head` goes out first: with the body's first chunk when that one is already buffered (one
 * write instead of two, a system call less per small response), else alone before waiting.
 */
export async function relayBody(inbox: SocketInbox, to: net.Socket, framing: BodyFraming, head?: Buffer): Promise<boolean> {
  let pending = head;
  const next = async (): Promise<Buffer | null> => {
    if (pending && !inbox.hasBuffered) await flush();
    return inbox.next();
  };
  const write = (part: Buffer): Promise<void> => {
    const first = pending;
    pending = undefined;
    return first ? writeAll(to, first, part) : writeAll(to, part);
  };
  const flush = (): Promise<void> => {
    const first = pending;
    pending = undefined;
    return first ? writeAll(to, first) : Promise.resolve();
  };
  if (framing.kind === "none") {
    await flush();
    return true;
  }
  if (framing.kind === "length") {
    let remaining = framing.bytes;
    while (remaining > 0) {
      const chunk = await next();
      if (!chunk) return false;
      const part = chunk.length > remaining ? chunk.subarray(0, remaining) : chunk;
      if (part.length < chunk.length) inbox.unshift(chunk.subarray(part.length));
      remaining -= part.length;
      await write(part);
    }
    await flush();
    return true;
  }
  if (framing.kind === "chunked") {
    const scanner = new ChunkedScanner();
    while (!scanner.done) {
      const chunk = await next();
      if (!chunk) return false;
      const used = scanner.scan(chunk);
      if (used < chunk.length) inbox.unshift(chunk.subarray(used));
      await write(used < chunk.length ? chunk.subarray(0, used) : chunk);
    }
    return true;
  }
  for (let chunk = await next(); chunk; chunk = await next()) await write(chunk);
  await flush();
  return true;
}
