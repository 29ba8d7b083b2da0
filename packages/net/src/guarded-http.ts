import http, { type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";

import { Deadline, untilAborted } from "./deadline.js";
import type { GuardedTlsOptions } from "./guarded-connect.js";
import { BadRedirectError, ResponseTooLargeError, TooManyRedirectsError } from "./outbound-errors.js";
import type { CheckedTarget, OutboundGuard } from "./outbound-guard.js";

export interface GuardedGetOptions {
  /** One deadline for every hop: resolve, connect, TLS, headers and body, in ms. */
  timeoutMs: number;
  /** The body may hold at most this many bytes; more is a ResponseTooLargeError. */
  maxBytes: number;
  /** Redirects followed, each re-checked by the guard; credentials headers are dropped when the origin changes. @defaultValue 5 */
  maxRedirects?: number;
  headers?: Record<string, string>;
  tls?: GuardedTlsOptions;
  signal?: AbortSignal;
}

export interface GuardedResponse {
  /** The URL that answered (after redirects). */
  url: string;
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Every URL redirected to, in order. */
  redirects: readonly string[];
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** A lookup that answers with the address the guard checked, so the socket goes there and nowhere else. */
function pinnedLookup(target: CheckedTarget): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
}

function readBody(response: IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const declared = Number(response.headers["content-length"]);
    if (Number.isFinite(declared) && declared > maxBytes) {
      response.destroy();
      return reject(new ResponseTooLargeError(maxBytes));
    }
    const chunks: Buffer[] = [];
    let size = 0;
    response.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        response.destroy();
        reject(new ResponseTooLargeError(maxBytes));
        return;
      }
      chunks.push(chunk);
    });
    response.once("end", () => resolve(Buffer.concat(chunks, size)));
    response.on("error", (error) => reject(signal.aborted ? signal.reason : error));
    response.once("close", () => {
      if (!response.complete) reject(signal.aborted ? signal.reason : new Error("connection closed before the response ended"));
    });
  });
}

function requestOnce(url: URL, target: CheckedTarget, headers: Record<string, string> | undefined, options: GuardedGetOptions, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const secure = url.protocol === "https:";
    const request = (secure ? https : http).request(url, {
      method: "GET",
      agent: false,
      headers,
      lookup: pinnedLookup(target),
      signal,
      ...(secure ? options.tls : {}),
    });
    request.once("response", resolve);
    request.on("error", (error) => reject(signal.aborted ? signal.reason : error));
    request.end();
  });
}

/**
 * GET over http or https where every hop's host passes the guard and the
 * socket goes to the checked address (no second lookup). Redirects are
 * followed up to `maxRedirects`, each checked anew.
 */
export async function guardedGet(guard: OutboundGuard, url: string | URL, options: GuardedGetOptions): Promise<GuardedResponse> {
  let current = new URL(url);
  if (!isHttp(current)) throw new TypeError(`unsupported URL scheme ${current.protocol}`);
  const maxRedirects = options.maxRedirects ?? 5;
  const redirects: string[] = [];
  let headers = options.headers;
  const deadline = new Deadline(options.timeoutMs, options.signal);
  try {
    for (;;) {
      const target = await untilAborted(guard.resolve(current.hostname), deadline.signal);
      const response = await requestOnce(current, target, headers, options, deadline.signal);
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (REDIRECT_STATUSES.has(status) && location !== undefined) {
        response.destroy();
        if (redirects.length >= maxRedirects) throw new TooManyRedirectsError(maxRedirects);
        let next: URL;
        try {
          next = new URL(location, current);
        } catch {
          throw new BadRedirectError(location);
        }
        if (!isHttp(next)) throw new BadRedirectError(next.href);
        // Credentials stay with the origin they were meant for (a download redirected to a storage host).
        if (next.origin !== current.origin) headers = withoutCredentials(headers);
        redirects.push(next.href);
        current = next;
        continue;
      }
      const body = await readBody(response, options.maxBytes, deadline.signal);
      return { url: current.href, status, headers: response.headers, body, redirects };
    }
  } finally {
    deadline.clear();
  }
}

function isHttp(url: URL): boolean {
  return url.protocol === "http:" || url.protocol === "https:";
}

const CREDENTIAL_HEADERS = new Set(["authorization", "cookie", "proxy-authorization"]);

function withoutCredentials(headers: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!headers) return headers;
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !CREDENTIAL_HEADERS.has(name.toLowerCase())));
}
