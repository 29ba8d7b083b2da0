import type net from "node:net";

import type { ProxyProtocol as RotatorProtocol } from "@roost/inventory";
import { dialThroughProxy, OutboundError, type OutboundGuard, type ProxyEndpoint, type ProxyTarget } from "@roost/net";

import type { PickOptions, Upstream, UpstreamPool } from "./upstream-pool.js";

/** Why a tunnel could not be opened; the listener maps it to 502/503/403 or a SOCKS reply code. */
export type TunnelFailureReason = "no_upstream" | "upstream_failed" | "target_refused" | "target_blocked" | "bad_target";

export class TunnelError extends Error {
  override readonly name = "TunnelError";
  constructor(readonly reason: TunnelFailureReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export interface UpstreamConnectorOptions {
  guard: OutboundGuard;
  /** The rotator's `protocol`: how it talks to its upstreams. */
  protocol: RotatorProtocol;
  pool: UpstreamPool;
  /** Resolve, connect and handshake of one upstream attempt, in ms. @defaultValue 10000 */
  attemptTimeoutMs?: number;
  /** Upstreams tried for one tunnel before giving up. @defaultValue 3 */
  maxAttempts?: number;
  /** Called once per failed upstream attempt (metrics). */
  onUpstreamFailure?: (reason: string) => void;
}

export interface OpenedTunnel {
  socket: net.Socket;
  upstream: Upstream;
}

/** How the rotator's protocol dials an upstream: https upstreams are HTTP proxies that CONNECT. */
export function upstreamEndpoint(protocol: RotatorProtocol, upstream: Upstream): ProxyEndpoint {
  return {
    protocol: protocol === "https" ? "http" : protocol,
    host: upstream.ip,
    port: upstream.port,
    ...(upstream.username || upstream.password ? { username: upstream.username, password: upstream.password } : {}),
  };
}

/** True when the failure is the upstream's (failover and bench), false when it is the target's or the client's. */
function isUpstreamFault(error: unknown): boolean {
  if (!(error instanceof OutboundError)) return !(error instanceof TypeError);
  return error.code !== "PROXY_REFUSED";
}

/**
 * Opens a tunnel to `target` through the pool's next upstream, trying the
 * next ones (at most `maxAttempts`) when an upstream fails to connect or
 * handshake; those failures count towards benching.
 */
export class UpstreamConnector {
  private readonly attemptTimeoutMs: number;
  private readonly maxAttempts: number;

  constructor(private readonly options: UpstreamConnectorOptions) {
    this.attemptTimeoutMs = options.attemptTimeoutMs ?? 10_000;
    this.maxAttempts = options.maxAttempts ?? 3;
  }

  async open(target: ProxyTarget, pick: PickOptions, signal?: AbortSignal): Promise<OpenedTunnel> {
    const { guard, pool, protocol } = this.options;
    try {
      // A literal target is checked once here, so a refused one is not charged to the upstreams.
      guard.checkLiteral(target.host.replace(/^\[(.*)\]$/, "$1"));
    } catch (error) {
      throw new TunnelError("target_blocked", "target address refused", { cause: error });
    }
    const tried = new Set<number>();
    let lastError: unknown;
    for (let attempt = 0; attempt < this.maxAttempts; attempt++) {
      const upstream = pool.pick(pick, tried);
      if (!upstream) break;
      tried.add(upstream.proxyId);
      try {
        const socket = await dialThroughProxy({ guard, proxy: upstreamEndpoint(protocol, upstream), target, deadlineMs: this.attemptTimeoutMs, ...(signal ? { signal } : {}) });
        pool.reportSuccess(upstream.proxyId);
        return { socket, upstream };
      } catch (error) {
        if (signal?.aborted) throw error;
        if (error instanceof TypeError) throw new TunnelError("bad_target", "target is not a host name", { cause: error });
        if (!isUpstreamFault(error)) {
          pool.reportSuccess(upstream.proxyId);
          throw new TunnelError("target_refused", "upstream refused the target", { cause: error });
        }
        pool.reportFailure(upstream.proxyId);
        this.options.onUpstreamFailure?.(error instanceof OutboundError ? error.code.toLowerCase() : "other");
        lastError = error;
      }
    }
    if (tried.size === 0) throw new TunnelError("no_upstream", "no alive upstream matches");
    throw new TunnelError("upstream_failed", `${tried.size} upstream(s) failed`, { cause: lastError });
  }
}
