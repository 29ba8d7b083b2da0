import http, { type IncomingHttpHeaders, type OutgoingHttpHeaders } from "node:http";
import net from "node:net";

import { Deadline } from "./deadline.js";
import { startTls, type GuardedTlsOptions } from "./guarded-connect.js";
import { ProxyError } from "./outbound-errors.js";
import type { OutboundGuard } from "./outbound-guard.js";
import { basicProxyAuthorization, connectToProxy, openProxyTunnel, targetHost, type ProxyEndpoint } from "./proxy-dialer.js";

export interface ProxyRequestOptions {
  proxy: ProxyEndpoint;
  /** http:// or https:// URL of the target (a judge). */
  url: string | URL;
  guard: OutboundGuard;
  /** One deadline for connect, proxy handshake, TLS, request and the whole answer, in ms. */
  deadlineMs: number;
  headers?: OutgoingHttpHeaders;
  /** Body bytes kept; the rest is not read and `truncated` is set. @defaultValue 65536 */
  maxBodyBytes?: number;
  tls?: GuardedTlsOptions;
  signal?: AbortSignal;
}

export interface ProxyResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  truncated: boolean;
  /** From the start of the call to the last byte read, in ms. */
  elapsedMs: number;
}

const DEFAULT_MAX_BODY_BYTES = 64 * 1024;

function exchange(socket: net.Socket, tunnel: net.Socket, path: string, headers: OutgoingHttpHeaders, maxBodyBytes: number, deadline: Deadline): Promise<ProxyResponse> {
  return new Promise<ProxyResponse>((resolve, reject) => {
    let settled = false;
    const finish = (error: unknown, response?: ProxyResponse): void => {
      if (settled) return;
      settled = true;
      deadline.signal.removeEventListener("abort", onAbort);
      socket.destroy();
      tunnel.destroy();
      if (response) resolve(response);
      else reject(deadline.signal.aborted ? deadline.signal.reason : error);
    };
    const onAbort = (): void => finish(deadline.signal.reason);
    deadline.signal.addEventListener("abort", onAbort, { once: true });
    // Listeners stay for the socket's life: a late second error must not go unhandled.
    socket.on("error", (error) => finish(error));
    if (tunnel !== socket) tunnel.on("error", (error) => finish(error));
    const request = http.request({ createConnection: () => socket, method: "GET", path, headers, setHost: false });
    request.on("error", (error) => finish(error));
    request.once("response", (response) => {
      const status = response.statusCode ?? 0;
      // Only 407 is surely the proxy's own: a 401 in absolute form may be the target's answer.
      if (status === 407) return finish(new ProxyError("PROXY_AUTH_FAILED", "proxy refused the credentials (407)", 407));
      const chunks: Buffer[] = [];
      let size = 0;
      const done = (truncated: boolean): void =>
        finish(null, { status, headers: response.headers, body: Buffer.concat(chunks, size), truncated, elapsedMs: performance.now() - deadline.startedAt });
      response.on("data", (chunk: Buffer) => {
        const room = maxBodyBytes - size;
        if (chunk.length > room) {
          chunks.push(chunk.subarray(0, room));
          size += room;
          return done(true);
        }
        chunks.push(chunk);
        size += chunk.length;
      });
      response.once("end", () => done(false));
      response.on("error", (error) => finish(error));
      response.once("close", () => finish(new ProxyError("PROXY_PROTOCOL", "connection closed before the answer ended")));
    });
    request.end();
  });
}

/**
 * One GET to `url` through `proxy` under one deadline: absolute-form for an
 * http:// URL through an HTTP proxy, else a tunnel (CONNECT or SOCKS) with
 * TLS for https://. The proxy passes the guard; the target is the proxy's to reach.
 */
export async function requestThroughProxy(options: ProxyRequestOptions): Promise<ProxyResponse> {
  const deadline = new Deadline(options.deadlineMs, options.signal);
  try {
    const url = new URL(options.url);
    const secure = url.protocol === "https:";
    if (!secure && url.protocol !== "http:") throw new TypeError(`unsupported URL scheme ${url.protocol}`);
    const port = url.port ? Number(url.port) : secure ? 443 : 80;
    const headers: OutgoingHttpHeaders = { host: url.host, connection: "close", ...options.headers };
    const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const { proxy, guard } = options;
    if (proxy.protocol === "http" && !secure) {
      // Refuses a reserved literal target; the URL parser already wrote numeric forms canonically.
      targetHost(guard, url.hostname);
      const { socket } = await connectToProxy(guard, proxy, deadline);
      const auth = basicProxyAuthorization(proxy);
      return await exchange(socket, socket, url.href, auth ? { ...headers, "proxy-authorization": auth } : headers, maxBodyBytes, deadline);
    }
    const tunnel = await openProxyTunnel(guard, proxy, { host: url.hostname, port }, deadline);
    const hostname = url.hostname.replace(/^\[|\]$/g, "");
    const socket = secure
      ? await startTls(tunnel, hostname, net.isIP(hostname) !== 0, options.tls ?? {}, deadline.signal).catch((error: unknown) => {
          tunnel.destroy();
          throw error;
        })
      : tunnel;
    return await exchange(socket, tunnel, `${url.pathname}${url.search}`, headers, maxBodyBytes, deadline);
  } finally {
    deadline.clear();
  }
}
