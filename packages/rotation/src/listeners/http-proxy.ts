import http from "node:http";
import type { Duplex } from "node:stream";

import type { ProxyProtocol as RotatorProtocol } from "@roost/inventory";
import { basicProxyAuthorization, type OutboundGuard } from "@roost/net";

import { TunnelError, upstreamEndpoint, type UpstreamConnector } from "../upstream-connector.js";
import type { UpstreamPool } from "../upstream-pool.js";
import type { UsernameOptions } from "../username-options.js";
import { authenticate, parseBasic, type ListenerAuth } from "./client-auth.js";

export interface HttpProxyDeps {
  auth: ListenerAuth;
  protocol: RotatorProtocol;
  pool: UpstreamPool;
  connector: UpstreamConnector;
  guard: OutboundGuard;
  /** Kept-alive connections to HTTP upstreams, per rotator. */
  agent: http.Agent;
  /** Upstream attempts for one plain request before 502. @defaultValue 3 */
  maxAttempts?: number;
  /** Every socket the listener opens, so stop() can destroy them. */
  track: (socket: Duplex) => void;
  onRequest?: (kind: "request" | "tunnel") => void;
  onUpstreamFailure?: (reason: string) => void;
}

// RFC 9110 7.6.1 hop-by-hop fields, plus the proxy credentials that are ours alone.
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer", "transfer-encoding", "upgrade"]);

const STATUS_FOR: Record<TunnelError["reason"], number> = { no_upstream: 503, upstream_failed: 502, target_refused: 502, target_blocked: 403, bad_target: 400 };

/** End-to-end headers of a message: hop-by-hop ones and those its Connection header names are dropped. */
export function endToEndHeaders(rawHeaders: readonly string[]): Record<string, string | string[]> {
  const dropped = new Set(HOP_BY_HOP);
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]?.toLowerCase() === "connection") for (const token of (rawHeaders[i + 1] ?? "").split(",")) dropped.add(token.trim().toLowerCase());
  }
  const headers: Record<string, string | string[]> = {};
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    const value = rawHeaders[i + 1];
    if (name === undefined || value === undefined || dropped.has(name.toLowerCase())) continue;
    const existing = headers[name];
    headers[name] = existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  return headers;
}

const PROXY_AUTHENTICATE = 'Basic realm="roost"';

function clientOptions(deps: HttpProxyDeps, req: http.IncomingMessage): UsernameOptions | undefined {
  const credentials = parseBasic(req.headers["proxy-authorization"]);
  return authenticate(deps.auth, credentials?.username, credentials?.password);
}

/** A body-less request can be sent to another upstream when the first fails before answering. */
function isReplayable(req: http.IncomingMessage): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] === undefined && (length === undefined || length === "0");
}

function answer(res: http.ServerResponse, status: number, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { "content-type": "text/plain", ...headers });
  res.end(`${http.STATUS_CODES[status] ?? "Error"}\n`);
}

function relayResponse(upstreamRes: http.IncomingMessage, res: http.ServerResponse): void {
  res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.statusMessage, endToEndHeaders(upstreamRes.rawHeaders));
  upstreamRes.pipe(res);
}

/** Absolute-form to an HTTP upstream over the kept-alive agent, with failover while nothing was answered. */
function forwardToHttpUpstream(deps: HttpProxyDeps, req: http.IncomingMessage, res: http.ServerResponse, url: URL, options: UsernameOptions): void {
  const maxAttempts = deps.maxAttempts ?? 3;
  const replayable = isReplayable(req);
  const tried = new Set<number>();
  const attempt = (): void => {
    const upstream = deps.pool.pick(options, tried);
    if (!upstream) return answer(res, tried.size === 0 ? 503 : 502);
    tried.add(upstream.proxyId);
    const retry = (reason: string): void => {
      deps.pool.reportFailure(upstream.proxyId);
      deps.onUpstreamFailure?.(reason);
      if (replayable && tried.size < maxAttempts && !res.headersSent) attempt();
      else answer(res, 502);
    };
    try {
      deps.guard.checkLiteral(upstream.ip);
    } catch {
      return retry("outbound_blocked");
    }
    const auth = basicProxyAuthorization(upstreamEndpoint(deps.protocol, upstream));
    const upstreamReq = http.request({
      host: upstream.ip,
      port: upstream.port,
      method: req.method,
      path: url.href,
      agent: deps.agent,
      headers: { ...endToEndHeaders(req.rawHeaders), host: url.host, ...(auth ? { "proxy-authorization": auth } : {}) },
    });
    upstreamReq.on("socket", deps.track);
    upstreamReq.once("response", (upstreamRes) => {
      // The upstream refusing its own credentials is its failure, never the client's 407.
      if (upstreamRes.statusCode === 407) {
        upstreamRes.resume();
        return retry("proxy_auth_failed");
      }
      deps.pool.reportSuccess(upstream.proxyId);
      relayResponse(upstreamRes, res);
    });
    upstreamReq.once("error", () => {
      if (res.headersSent) res.destroy();
      else retry("proxy_unreachable");
    });
    if (replayable) upstreamReq.end();
    else req.pipe(upstreamReq);
  };
  attempt();
}

/** A plain request through a tunnel (SOCKS upstreams, and https upstreams which only CONNECT). */
async function forwardThroughTunnel(deps: HttpProxyDeps, req: http.IncomingMessage, res: http.ServerResponse, url: URL, options: UsernameOptions): Promise<void> {
  const port = url.port === "" ? 80 : Number(url.port);
  let tunnel;
  try {
    tunnel = await deps.connector.open({ host: url.hostname, port }, options);
  } catch (error) {
    return answer(res, error instanceof TunnelError ? STATUS_FOR[error.reason] : 502);
  }
  deps.track(tunnel.socket);
  const upstreamReq = http.request({
    createConnection: () => tunnel.socket,
    agent: false,
    method: req.method,
    path: `${url.pathname}${url.search}`,
    headers: { ...endToEndHeaders(req.rawHeaders), host: url.host },
  });
  upstreamReq.once("response", (upstreamRes) => relayResponse(upstreamRes, res));
  upstreamReq.once("error", () => answer(res, 502));
  req.pipe(upstreamReq);
}

function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(authority);
  const port = Number(match?.[3]);
  const host = match?.[1] ?? match?.[2];
  if (!host || !Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  return { host, port };
}

function rawAnswer(socket: Duplex, status: number, extra = ""): void {
  socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? "Error"}\r\n${extra}Content-Length: 0\r\nConnection: close\r\n\r\n`);
}

async function handleConnect(deps: HttpProxyDeps, req: http.IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
  deps.track(client);
  client.on("error", () => client.destroy());
  const options = clientOptions(deps, req);
  if (!options) return rawAnswer(client, 407, `Proxy-Authenticate: ${PROXY_AUTHENTICATE}\r\n`);
  const target = parseAuthority(req.url ?? "");
  if (!target) return rawAnswer(client, 400);
  deps.onRequest?.("tunnel");
  let tunnel;
  try {
    tunnel = await deps.connector.open(target, options);
  } catch (error) {
    return rawAnswer(client, error instanceof TunnelError ? STATUS_FOR[error.reason] : 502);
  }
  const upstream = tunnel.socket;
  deps.track(upstream);
  if (client.destroyed) {
    upstream.destroy();
    return;
  }
  upstream.on("error", () => client.destroy());
  client.on("close", () => upstream.destroy());
  upstream.on("close", () => client.destroy());
  client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
  if (head.length > 0) upstream.write(head);
  // pipe() pauses the faster side when the other's buffer is full: backpressure both ways.
  client.pipe(upstream);
  upstream.pipe(client);
}

/** Serves forward-proxy requests (absolute-form) and CONNECT tunnels on an http or https server. */
export function attachHttpProxy(server: http.Server, deps: HttpProxyDeps): void {
  server.on("connection", deps.track);
  server.on("secureConnection", deps.track);
  server.on("request", (req, res) => {
    const options = clientOptions(deps, req);
    if (!options) return answer(res, 407, { "proxy-authenticate": PROXY_AUTHENTICATE });
    let url: URL;
    try {
      url = new URL(req.url ?? "");
    } catch {
      return answer(res, 400);
    }
    if (url.protocol !== "http:") return answer(res, 400);
    try {
      deps.guard.checkLiteral(url.hostname.replace(/^\[(.*)\]$/, "$1"));
    } catch {
      return answer(res, 403);
    }
    deps.onRequest?.("request");
    res.on("error", () => res.destroy());
    if (deps.protocol === "http") forwardToHttpUpstream(deps, req, res, url, options);
    else void forwardThroughTunnel(deps, req, res, url, options);
  });
  server.on("connect", (req: http.IncomingMessage, client: Duplex, head: Buffer) => void handleConnect(deps, req, client, head));
}
