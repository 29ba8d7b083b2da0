import type net from "node:net";

import { SocksClient, SocksClientError } from "socks";

import { Deadline, untilAborted } from "./deadline.js";
import { connectChecked } from "./guarded-connect.js";
import { ProxyError } from "./outbound-errors.js";
import type { OutboundGuard } from "./outbound-guard.js";

/** How Roost talks to a proxy: HTTP (absolute-form or CONNECT), SOCKS4/4a, SOCKS5. */
export type ProxyProtocol = "http" | "socks4" | "socks5";

export interface ProxyEndpoint {
  protocol: ProxyProtocol;
  host: string;
  port: number;
  /** HTTP Basic user, SOCKS4 user id, or SOCKS5 (RFC 1929) user. */
  username?: string;
  /** HTTP Basic or SOCKS5 password; SOCKS4 has none. */
  password?: string;
}

export interface ProxyTarget {
  host: string;
  port: number;
}

export interface DialThroughProxyOptions {
  proxy: ProxyEndpoint;
  target: ProxyTarget;
  /** One deadline for resolve, connect and the proxy's handshake, in ms. */
  deadlineMs: number;
  guard: OutboundGuard;
  signal?: AbortSignal;
}

/** Largest CONNECT answer head read before the proxy counts as broken. */
const MAX_CONNECT_HEAD_BYTES = 16 * 1024;
const HEAD_END = Buffer.from("\r\n\r\n");
/** Letters, digits, `-`, `_` and dots, at most 253 characters (IDNs arrive as punycode). */
const VALID_HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?$/;

/** `Basic …` for a proxy with credentials, else undefined. */
export function basicProxyAuthorization(proxy: ProxyEndpoint): string | undefined {
  if (!proxy.username && !proxy.password) return undefined;
  return `Basic ${Buffer.from(`${proxy.username ?? ""}:${proxy.password ?? ""}`).toString("base64")}`;
}

function authority(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The target as the proxy should see it: a literal in any numeric form is
 * checked by the guard and sent canonical; a name goes to the proxy unresolved.
 */
export function targetHost(guard: OutboundGuard, host: string): string {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  const literal = guard.checkLiteral(bare);
  if (literal) return literal.address;
  // A name ends up in a CONNECT line or a SOCKS request: nothing but DNS characters may pass.
  if (!VALID_HOST_NAME.test(bare)) throw new TypeError(`not a host name: ${JSON.stringify(bare.slice(0, 80))}`);
  return bare;
}

function httpConnect(socket: net.Socket, proxy: ProxyEndpoint, host: string, port: number, signal: AbortSignal): Promise<net.Socket> {
  return new Promise<net.Socket>((resolve, reject) => {
    let head: Buffer = Buffer.alloc(0);
    const fail = (error: unknown): void => {
      cleanup();
      socket.destroy();
      reject(signal.aborted ? signal.reason : error);
    };
    const onAbort = (): void => fail(signal.reason);
    const onError = (error: Error): void => fail(new ProxyError("PROXY_PROTOCOL", `proxy connection failed: ${error.message}`, undefined, { cause: error }));
    const onClose = (): void => fail(new ProxyError("PROXY_PROTOCOL", "proxy closed the connection before answering CONNECT"));
    const onReadable = (): void => {
      let chunk: Buffer | null;
      while ((chunk = socket.read() as Buffer | null) !== null) {
        head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
        const end = head.indexOf(HEAD_END);
        if (end === -1) {
          if (head.length > MAX_CONNECT_HEAD_BYTES) return fail(new ProxyError("PROXY_PROTOCOL", "CONNECT answer head too large"));
          continue;
        }
        const statusLine = head.subarray(0, head.indexOf("\r\n")).toString("latin1");
        const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
        const status = match ? Number(match[1]) : 0;
        if (status === 0) return fail(new ProxyError("PROXY_PROTOCOL", `not an HTTP answer to CONNECT: ${JSON.stringify(statusLine.slice(0, 80))}`));
        // A CONNECT answer always comes from the proxy; tinyproxy answers wrong credentials with 401.
        if (status === 407 || status === 401) return fail(new ProxyError("PROXY_AUTH_FAILED", `proxy refused the credentials (${status})`, status));
        if (status < 200 || status > 299) return fail(new ProxyError("PROXY_REFUSED", `proxy refused CONNECT with ${status}`, status));
        cleanup();
        const rest = head.subarray(end + HEAD_END.length);
        if (rest.length > 0) socket.unshift(rest);
        resolve(socket);
        return;
      }
    };
    const cleanup = (): void => {
      signal.removeEventListener("abort", onAbort);
      socket.off("readable", onReadable);
      socket.off("error", onError);
      socket.off("close", onClose);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    socket.on("readable", onReadable);
    socket.once("error", onError);
    socket.once("close", onClose);
    const target = authority(host, port);
    const auth = basicProxyAuthorization(proxy);
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${auth ? `Proxy-Authorization: ${auth}\r\n` : ""}\r\n`);
  });
}

function socksError(error: unknown): ProxyError {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof SocksClientError) {
    if (/authentication/i.test(message)) return new ProxyError("PROXY_AUTH_FAILED", message, undefined, { cause: error });
    if (/rejected/i.test(message)) return new ProxyError("PROXY_REFUSED", message, undefined, { cause: error });
  }
  return new ProxyError("PROXY_PROTOCOL", message, undefined, { cause: error });
}

async function socksHandshake(socket: net.Socket, address: string, proxy: ProxyEndpoint, host: string, port: number, deadline: Deadline): Promise<net.Socket> {
  const onAbort = (): void => {
    socket.destroy();
  };
  deadline.signal.addEventListener("abort", onAbort, { once: true });
  try {
    const { socket: tunnel } = await SocksClient.createConnection({
      command: "connect",
      proxy: {
        host: address,
        port: proxy.port,
        type: proxy.protocol === "socks4" ? 4 : 5,
        // Empty strings mean no credentials, as stored for proxies uploaded without them.
        ...(proxy.username ? { userId: proxy.username } : {}),
        ...(proxy.username && proxy.protocol === "socks5" ? { password: proxy.password ?? "" } : {}),
      },
      destination: { host, port },
      existing_socket: socket,
      timeout: Math.max(1, Math.ceil(deadline.remainingMs())),
    });
    return tunnel;
  } catch (error) {
    socket.destroy();
    throw deadline.signal.aborted ? deadline.signal.reason : socksError(error);
  } finally {
    deadline.signal.removeEventListener("abort", onAbort);
  }
}

/** Resolves the proxy through the guard and opens TCP to the checked address. */
export async function connectToProxy(guard: OutboundGuard, proxy: ProxyEndpoint, deadline: Deadline): Promise<{ socket: net.Socket; address: string }> {
  const checked = await untilAborted(guard.resolve(proxy.host), deadline.signal);
  try {
    return { socket: await connectChecked(checked, proxy.port, deadline.signal), address: checked.address };
  } catch (error) {
    if (deadline.signal.aborted) throw deadline.signal.reason;
    const reason = error instanceof Error ? error.message : String(error);
    throw new ProxyError("PROXY_UNREACHABLE", `proxy ${authority(checked.address, proxy.port)} unreachable: ${reason}`, undefined, { cause: error });
  }
}

/** Opens a tunnel to `target` through `proxy` inside an existing deadline. */
export async function openProxyTunnel(guard: OutboundGuard, proxy: ProxyEndpoint, target: ProxyTarget, deadline: Deadline): Promise<net.Socket> {
  const host = targetHost(guard, target.host);
  const { socket, address } = await connectToProxy(guard, proxy, deadline);
  if (proxy.protocol === "http") return httpConnect(socket, proxy, host, target.port, deadline.signal);
  return socksHandshake(socket, address, proxy, host, target.port, deadline);
}

/**
 * A TCP tunnel to `target` through `proxy` (HTTP CONNECT, SOCKS4/4a or
 * SOCKS5). The proxy's address passes the guard and is dialled as checked; a
 * target name is resolved by the proxy. One deadline covers the whole dial.
 */
export async function dialThroughProxy(options: DialThroughProxyOptions): Promise<net.Socket> {
  const deadline = new Deadline(options.deadlineMs, options.signal);
  try {
    return await openProxyTunnel(options.guard, options.proxy, options.target, deadline);
  } finally {
    deadline.clear();
  }
}
