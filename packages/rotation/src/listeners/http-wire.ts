import type net from "node:net";

import type { ProxyProtocol as RotatorProtocol } from "@roost/inventory";
import { basicProxyAuthorization, type OutboundGuard } from "@roost/net";

import { TunnelError, upstreamEndpoint, type UpstreamConnector } from "../upstream-connector.js";
import type { Upstream, UpstreamPool } from "../upstream-pool.js";
import type { UsernameOptions } from "../username-options.js";
import { authenticate, parseBasic, type ListenerAuth } from "./client-auth.js";
import {
  clientResponseHead,
  endToEnd,
  headerValue,
  parseHead,
  relayBody,
  relayBodyThen,
  requestHeadFraming,
  responseHeadFraming,
  scanRequestHead,
  scanResponseHead,
  serializeHead,
  upstreamRequestHead,
  type BodyFraming,
  type RequestHead,
  type ResponseHead,
} from "./http-message.js";
import { HeadTooLargeError, readHeadThen, SocketInbox, writeAll, writeOrWait } from "./socket-inbox.js";
import { checkTarget } from "./request-target.js";
import { spliceTunnel } from "./splice.js";
import type { UpstreamConnection, UpstreamConnections } from "./upstream-connections.js";

export interface HttpWireDeps {
  auth: ListenerAuth;
  protocol: RotatorProtocol;
  pool: UpstreamPool;
  connector: UpstreamConnector;
  guard: OutboundGuard;
  connections: UpstreamConnections;
  /** Connect to one upstream, in ms. */
  upstreamTimeoutMs: number;
  /** Wait for the response head once a plain request is sent, in ms; then 504. */
  responseTimeoutMs: number;
  /** A CONNECT tunnel without a byte either way for this long is closed, in ms. */
  tunnelIdleTimeoutMs: number;
  /** Upstreams tried for one request before 502. */
  maxAttempts: number;
  track: (socket: net.Socket) => void;
  onRequest?: (kind: "request" | "tunnel") => void;
  onUpstreamFailure?: (reason: string) => void;
}

/** Largest request or response head, in bytes (a larger request gets 431). */
const MAX_HEAD_BYTES = 64 * 1024;
/** A client connection with no request in flight is closed after this, in ms. */
const CLIENT_IDLE_MS = 120_000;
const REASONS: Record<number, string> = { 400: "Bad Request", 403: "Forbidden", 407: "Proxy Authentication Required", 431: "Request Header Fields Too Large", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout", 505: "HTTP Version Not Supported" };
/** RFC 9110 9.2.2: requests a client may repeat; only these go to a second upstream once one has received them. */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]);
const STATUS_FOR: Record<TunnelError["reason"], number> = { no_upstream: 503, upstream_failed: 502, target_refused: 502, target_blocked: 403, bad_target: 400 };
const PROXY_AUTHENTICATE = 'Basic realm="roost"';
const CONTINUE = Buffer.from("HTTP/1.1 100 Continue\r\n\r\n", "latin1");

/** Upstreams that passed each guard: an upstream's address is fixed and a pool reload brings new objects, so once per member is enough. */
const guardedUpstreams = new WeakMap<OutboundGuard, WeakSet<Upstream>>();

function checkUpstream(guard: OutboundGuard, upstream: Upstream): void {
  let passed = guardedUpstreams.get(guard);
  if (passed?.has(upstream)) return;
  guard.checkLiteral(upstream.ip);
  if (!passed) guardedUpstreams.set(guard, (passed = new WeakSet()));
  passed.add(upstream);
}

class UpstreamFailure extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }

  /** What the client gets when no other upstream is tried. */
  get status(): number {
    return this.reason === "response_timeout" ? 504 : 502;
  }
}

/** The client closed inside its request body: nobody's upstream failure. */
class ClientGone extends Error {}

/** A short answer of the proxy's own; `keepAlive` only when the request had no unread body. */
async function respond(client: net.Socket, status: number, keepAlive: boolean, extra: [string, string][] = []): Promise<void> {
  const head = serializeHead(`HTTP/1.1 ${status} ${REASONS[status] ?? "Error"}`, [...extra, ["Content-Length", "0"], ...(keepAlive ? [] : ([["Connection", "close"]] as [string, string][]))]);
  await writeAll(client, head);
  if (!keepAlive) client.end();
}

function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]/]+)):(\d{1,5})$/.exec(authority);
  const port = Number(match?.[3]);
  const host = match?.[1] ?? match?.[2];
  if (!host || !Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  return { host, port };
}

/**
 * Reads a response head, passing 1xx interim answers on to the client except
 * 100 Continue (the listener sends its own); `done(null)` when the upstream
 * closed without a byte.
 */
function readResponseHeadThen(upstream: SocketInbox, client: net.Socket, done: (head: ResponseHead | null) => void, fail: (error: Error) => void): void {
  const next = (): void => readHeadThen(upstream, MAX_HEAD_BYTES, onHead, fail);
  const onHead = (raw: Buffer | null): void => {
    if (!raw) return done(null);
    let head: ResponseHead | undefined;
    try {
      head = scanResponseHead(raw);
    } catch (error) {
      return fail(error as Error);
    }
    if (!head || !/^HTTP\/1\.[01]$/.test(head.version)) return fail(new UpstreamFailure("proxy_protocol"));
    const status = Number(head.status);
    if (status < 100 || status >= 200 || status === 101) return done(head);
    if (status === 100 || writeOrWait(client, clientResponseHead(head, false), undefined, next, fail)) next();
  };
  next();
}

function readResponseHead(upstream: SocketInbox, client: net.Socket): Promise<ResponseHead | null> {
  return new Promise((resolve, reject) => readResponseHeadThen(upstream, client, resolve, reject));
}

/**
 * Relays the request body while already reading the response, so a final
 * answer that comes first (413, 401) ends the exchange. A client that asked
 * for `Expect: 100-continue` gets our 100 once the upstream took the head:
 * upstream proxies such as tinyproxy never relay one, and the client would
 * stall until its own timeout. Once the request is sent whole, the head must
 * arrive within `timeoutMs`.
 * `head` is null when the upstream closed without a byte; `bodyComplete`
 * false when it answered before the body was through.
 */
async function awaitResponse(
  clientInbox: SocketInbox,
  client: net.Socket,
  upstream: UpstreamConnection,
  framing: BodyFraming,
  expectContinue: boolean,
  timeoutMs: number,
): Promise<{ head: ResponseHead | null; bodyComplete: boolean }> {
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const pending = readResponseHead(upstream.inbox, client);
  pending.catch(() => undefined);
  try {
    let bodyComplete = true;
    if (framing.kind !== "none") {
      if (expectContinue) await writeAll(client, CONTINUE);
      const body = relayBody(clientInbox, upstream.socket, framing).catch(() => "upstream-closed" as const);
      const first = await Promise.race([body, pending.then(() => "answered" as const, () => "answered" as const)]);
      if (first === false) throw new ClientGone("client closed inside the body");
      bodyComplete = first === true;
    }
    if (bodyComplete) {
      // This deadline bounds the wait, so the client's idle timer is off meanwhile.
      client.setTimeout(0);
      timer = setTimeout(() => {
        timedOut = true;
        upstream.socket.destroy();
      }, timeoutMs);
    }
    const head = await pending.catch((error: unknown) => {
      throw timedOut ? new UpstreamFailure("response_timeout") : error;
    });
    if (timedOut) throw new UpstreamFailure("response_timeout");
    return { head, bodyComplete };
  } finally {
    if (timer) {
      clearTimeout(timer);
      if (!client.destroyed) client.setTimeout(CLIENT_IDLE_MS);
    }
  }
}

/** Sends the response head and body to the client; true when both sides may carry another message. */
async function relayResponse(head: ResponseHead, method: string, from: SocketInbox, client: net.Socket, clientWantsClose: boolean): Promise<{ clientOpen: boolean; upstreamReusable: boolean }> {
  const framing = responseHeadFraming(head, method);
  if (!framing) throw new UpstreamFailure("proxy_protocol");
  const closeClient = clientWantsClose || framing.kind === "until-close";
  const complete = await relayBody(from, client, framing, clientResponseHead(head, closeClient));
  const upstreamCloses = /\bclose\b/i.test(head.connection ?? "") || head.version === "HTTP/1.0";
  return { clientOpen: complete && !closeClient, upstreamReusable: complete && framing.kind !== "until-close" && !upstreamCloses };
}

/**
 * One client connection of an http or https listener: kept-alive requests in
 * absolute form and CONNECT tunnels, parsed here on the socket.
 */
export function handleHttpClient(deps: HttpWireDeps, client: net.Socket): void {
  deps.track(client);
  client.setNoDelay(true);
  client.on("error", () => client.destroy());
  client.setTimeout(CLIENT_IDLE_MS, () => client.destroy());
  const inbox = new SocketInbox(client);
  // The last credentials that passed on this connection: a client sends the same header on every request.
  let passedAuthorization: string | undefined;
  let passedOptions: UsernameOptions | undefined;
  const authorize = (header: string | undefined): UsernameOptions | undefined => {
    if (passedOptions && header === passedAuthorization) return passedOptions;
    const credentials = parseBasic(header);
    const options = authenticate(deps.auth, credentials?.username, credentials?.password);
    if (options) [passedAuthorization, passedOptions] = [header, options];
    return options;
  };

  const tunnel = async (target: string, options: UsernameOptions): Promise<void> => {
    const destination = parseAuthority(target);
    if (!destination) return respond(client, 400, false);
    deps.onRequest?.("tunnel");
    let opened;
    try {
      opened = await deps.connector.open(destination, options);
    } catch (error) {
      return respond(client, error instanceof TunnelError ? STATUS_FOR[error.reason] : 502, false);
    }
    const upstream = opened.socket;
    deps.track(upstream);
    if (client.destroyed) return void upstream.destroy();
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    spliceTunnel(client, upstream, inbox.detach(), deps.tunnelIdleTimeoutMs);
  };

  /**
   * Through an HTTP upstream in absolute form over a kept-alive connection.
   * Failover to the next upstream while nothing was sent, and after sending
   * only for an idempotent request without a body that got no byte back.
   * Written as callbacks, not awaited steps: the common exchange (kept
   * connection, head out, head back, body relayed) then runs without a promise
   * per step; the one promise settles when the exchange is over, true when the
   * client connection may carry another request.
   */
  const viaHttpUpstream = (method: string, outgoing: (authorization: string | undefined) => Buffer, framing: BodyFraming, expectContinue: boolean, options: UsernameOptions, clientWantsClose: boolean): Promise<boolean> =>
    new Promise<boolean>((resolve, reject) => {
      const hasBody = framing.kind !== "none";
      const repeatable = !hasBody && IDEMPOTENT.has(method);
      const tried = new Set<number>();
      let lastFailure: UpstreamFailure | undefined;
      // The current attempt.
      let upstream: Upstream;
      let head: Buffer;
      let connection: UpstreamConnection | undefined;
      let reused = false;
      // A reused connection the upstream closed meanwhile answers nothing: one more connection is tried (kept ones only for repeatable requests).
      let retried = false;
      let requestSent = false;
      let refused = false;
      let readBefore = 0;
      let deadline: NodeJS.Timeout | undefined;
      let timedOut = false;
      // A client that goes away takes its in-flight upstream connection with it.
      const onClientClose = (): void => void connection?.socket.destroy();

      const answer = (status: number, keepAlive: boolean): void => void respond(client, status, keepAlive).then(() => resolve(keepAlive), reject);

      const attempt = (): void => {
        const picked = deps.pool.pick(options, tried);
        if (!picked) return answer(lastFailure?.status ?? 503, !hasBody && !clientWantsClose);
        upstream = picked;
        tried.add(upstream.proxyId);
        head = outgoing(basicProxyAuthorization(upstreamEndpoint(deps.protocol, upstream)));
        connection = undefined;
        retried = false;
        requestSent = false;
        refused = false;
        readBefore = 0;
        client.once("close", onClientClose);
        checkUpstream(deps.guard, upstream);
        connect();
      };

      const connect = (): void => {
        const kept = repeatable ? deps.connections.takeIdle(upstream.ip, upstream.port) : undefined;
        if (kept) return send(kept, true);
        deps.connections.acquire(upstream.ip, upstream.port, deps.upstreamTimeoutMs, !repeatable).then((acquired) => guarded(() => send(acquired.connection, acquired.reused)), fail);
      };

      const send = (acquired: UpstreamConnection, wasReused: boolean): void => {
        connection = acquired;
        reused = wasReused;
        if (client.destroyed) return fail(new ClientGone("client closed"));
        readBefore = acquired.socket.bytesRead;
        requestSent = true;
        if (writeOrWait(acquired.socket, head, undefined, awaitHead, fail)) awaitHead();
      };

      const awaitHead = (): void => {
        const sent = connection;
        if (!sent) return fail(new UpstreamFailure("proxy_unreachable"));
        if (hasBody) {
          awaitResponse(inbox, client, sent, framing, expectContinue, deps.responseTimeoutMs).then((response) => guarded(() => onHead(response.head, response.bodyComplete)), fail);
          return;
        }
        // As in awaitResponse: the deadline bounds the wait, so the client's idle timer is off meanwhile.
        client.setTimeout(0);
        timedOut = false;
        deadline = setTimeout(() => {
          timedOut = true;
          sent.socket.destroy();
        }, deps.responseTimeoutMs);
        readResponseHeadThen(
          sent.inbox,
          client,
          (response) => {
            endDeadline();
            guarded(() => (timedOut ? fail(new UpstreamFailure("response_timeout")) : onHead(response, true)));
          },
          (error) => {
            endDeadline();
            fail(timedOut ? new UpstreamFailure("response_timeout") : error);
          },
        );
      };

      const endDeadline = (): void => {
        clearTimeout(deadline);
        deadline = undefined;
        if (!client.destroyed) client.setTimeout(CLIENT_IDLE_MS);
      };

      const onHead = (response: ResponseHead | null, bodyComplete: boolean): void => {
        const sent = connection;
        if (!sent) return fail(new UpstreamFailure("proxy_unreachable"));
        if (response === null) {
          sent.socket.destroy();
          if (!reused || retried) return fail(new UpstreamFailure("proxy_unreachable"));
          retried = true;
          return connect();
        }
        // The upstream refusing its own credentials is its failure, never the client's 407; it forwarded nothing.
        if (response.status === "407") {
          refused = true;
          return fail(new UpstreamFailure("proxy_auth_failed"));
        }
        deps.pool.reportSuccess(upstream.proxyId);
        const responseFramed = responseHeadFraming(response, method);
        if (!responseFramed) return fail(new UpstreamFailure("proxy_protocol"));
        const closeClient = clientWantsClose || !bodyComplete || responseFramed.kind === "until-close";
        const upstreamCloses = /\bclose\b/i.test(response.connection ?? "") || response.version === "HTTP/1.0";
        relayBodyThen(
          sent.inbox,
          client,
          responseFramed,
          clientResponseHead(response, closeClient),
          (complete) => {
            client.off("close", onClientClose);
            if (complete && responseFramed.kind !== "until-close" && !upstreamCloses && bodyComplete) deps.connections.release(upstream.ip, upstream.port, sent);
            else sent.socket.destroy();
            resolve(complete && !closeClient);
          },
          fail,
        );
      };

      const fail = (error: unknown): void => {
        client.off("close", onClientClose);
        connection?.socket.destroy();
        if (client.destroyed || error instanceof ClientGone) {
          client.destroy();
          return resolve(false);
        }
        const failure = error instanceof UpstreamFailure ? error : new UpstreamFailure("proxy_unreachable");
        lastFailure = failure;
        deps.pool.reportFailure(upstream.proxyId);
        deps.onUpstreamFailure?.(failure.reason);
        const answered = connection !== undefined && connection.socket.bytesRead > readBefore;
        const safe = !requestSent || (!hasBody && refused) || (repeatable && !answered);
        if (!safe || tried.size >= deps.maxAttempts) return answer(failure.status, false);
        guarded(attempt);
      };

      /** A step run from a socket event: what it throws is the attempt's failure, never the process's. */
      const guarded = (step: () => void): void => {
        try {
          step();
        } catch (error) {
          fail(error);
        }
      };

      try {
        attempt();
      } catch (error) {
        // Before any upstream was picked, a throw is no upstream's failure.
        if (tried.size === 0) reject(error as Error);
        else fail(error);
      }
    });

  /** Through a tunnel (SOCKS upstreams, and https upstreams that only CONNECT), one per request. */
  const viaTunnel = async (method: string, url: URL, headers: [string, string][], framing: BodyFraming, expectContinue: boolean, options: UsernameOptions, clientWantsClose: boolean): Promise<boolean> => {
    const keep = framing.kind === "none" && !clientWantsClose;
    let opened;
    try {
      opened = await deps.connector.open({ host: url.hostname, port: url.port === "" ? 80 : Number(url.port) }, options);
    } catch (error) {
      await respond(client, error instanceof TunnelError ? STATUS_FOR[error.reason] : 502, keep);
      return keep;
    }
    const upstream = opened.socket;
    deps.track(upstream);
    const from = new SocketInbox(upstream);
    try {
      await writeAll(upstream, serializeHead(`${method} ${url.pathname}${url.search} HTTP/1.1`, [...headers, ["Connection", "close"]]));
      const { head: response, bodyComplete } = await awaitResponse(inbox, client, { socket: upstream, inbox: from }, framing, expectContinue, deps.responseTimeoutMs);
      if (!response) throw new UpstreamFailure("proxy_protocol");
      return (await relayResponse(response, method, from, client, clientWantsClose || !bodyComplete)).clientOpen;
    } catch (error) {
      if (client.destroyed || error instanceof ClientGone) {
        client.destroy();
        return false;
      }
      // The tunnel is open and the request sent: no second upstream (the connector already failed over the dial).
      const failure = error instanceof UpstreamFailure ? error : new UpstreamFailure("proxy_unreachable");
      deps.onUpstreamFailure?.(failure.reason);
      await respond(client, failure.status, false).catch(() => client.destroy());
      return false;
    } finally {
      upstream.destroy();
    }
  };

  // Not an async function: the forwarding's own promise is passed on, not wrapped in another.
  const plain = (head: RequestHead, options: UsernameOptions): Promise<boolean> => {
    const { method, target, version } = head;
    const connectionHeader = head.connection ?? "";
    const clientWantsClose = version === "HTTP/1.0" ? !/\bkeep-alive\b/i.test(connectionHeader) : /\bclose\b/i.test(connectionHeader);
    const framing = requestHeadFraming(head);
    const checked = checkTarget(deps.guard, target);
    if (!framing || !checked) return respond(client, 400, false).then(() => false);
    if (checked.blocked) {
      const keep = framing.kind === "none" && !clientWantsClose;
      return respond(client, 403, keep).then(() => keep);
    }
    deps.onRequest?.("request");
    const host = head.hasHost ? undefined : checked.host;
    if (deps.protocol === "http" && !head.parsed) {
      // The client's own request line and lines, byte for byte (its target passed the URL parser).
      return viaHttpUpstream(method, (authorization) => upstreamRequestHead(head, host, authorization), framing, false, options, clientWantsClose);
    }
    const parsed = head.parsed ?? parseHead(head.raw);
    if (!parsed) return respond(client, 400, false).then(() => false);
    // The expectation is answered here (awaitResponse), so it is not passed on; HTTP/1.0 clients' is ignored (RFC 9110 10.1.1).
    const expectContinue = /^100-continue$/i.test(headerValue(parsed, "expect") ?? "");
    const headers = expectContinue ? endToEnd(parsed).filter(([key]) => key.toLowerCase() !== "expect") : endToEnd(parsed);
    if (host !== undefined) headers.push(["Host", host]);
    const sendContinue = expectContinue && version === "HTTP/1.1";
    return deps.protocol === "http"
      ? viaHttpUpstream(method, (authorization) => serializeHead(`${method} ${target} HTTP/1.1`, authorization ? [...headers, ["Proxy-Authorization", authorization]] : headers), framing, sendContinue, options, clientWantsClose)
      : viaTunnel(method, new URL(target), headers, framing, sendContinue, options, clientWantsClose);
  };

  // The request loop, as callbacks like the exchange: a head already buffered is taken at once.
  const serve = (): void => readHeadThen(inbox, MAX_HEAD_BYTES, onRequestHead, onHeadFailure);
  const settle = (done: Promise<void>): void => void done.catch(() => client.destroy());
  const onHeadFailure = (error: Error): void => {
    if (error instanceof HeadTooLargeError) settle(respond(client, 431, false));
    else client.destroy();
  };
  // Run from socket events: a throw (a bug of ours) costs this client its connection, never the process.
  const onRequestHead = (raw: Buffer | null): void => {
    try {
      handleHead(raw);
    } catch {
      client.destroy();
    }
  };
  const handleHead = (raw: Buffer | null): void => {
    if (!raw) return void client.end();
    const head = scanRequestHead(raw);
    if (!head) return settle(respond(client, 400, false));
    const { method, target, version } = head;
    if (version !== "HTTP/1.1" && version !== "HTTP/1.0") return settle(respond(client, 505, false));
    const options = authorize(head.proxyAuthorization);
    if (!options) return settle(respond(client, 407, false, [["Proxy-Authenticate", PROXY_AUTHENTICATE]]));
    if (method === "CONNECT") return settle(tunnel(target, options));
    plain(head, options).then(
      (open) => {
        if (!open) return void (client.destroyed || client.end());
        try {
          serve();
        } catch {
          client.destroy();
        }
      },
      () => client.destroy(),
    );
  };
  try {
    serve();
  } catch {
    client.destroy();
  }
}
