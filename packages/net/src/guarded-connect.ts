import net from "node:net";
import tls from "node:tls";

import { Deadline, untilAborted } from "./deadline.js";
import type { CheckedTarget, OutboundGuard } from "./outbound-guard.js";

/** TLS settings for a guarded connection; `servername` defaults to the host when it is a name. */
export type GuardedTlsOptions = Pick<tls.ConnectionOptions, "ca" | "rejectUnauthorized" | "servername" | "ALPNProtocols" | "minVersion">;

export interface GuardedConnectOptions {
  host: string;
  port: number;
  /** Wrap the connection in TLS (true for defaults). */
  tls?: boolean | GuardedTlsOptions;
  /** Deadline for resolve, connect and TLS handshake together, in ms. */
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * Waits until `socket` emits `readyEvent`; on error or abort the socket is
 * destroyed and the promise rejects (with the abort reason for an abort).
 */
export function socketReady<T extends net.Socket>(socket: T, readyEvent: "connect" | "secureConnect", signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      cleanup();
      socket.destroy();
      reject(signal.reason);
    };
    const onError = (error: Error): void => {
      cleanup();
      socket.destroy();
      reject(signal.aborted ? signal.reason : error);
    };
    const onReady = (): void => {
      cleanup();
      resolve(socket);
    };
    const cleanup = (): void => {
      signal.removeEventListener("abort", onAbort);
      socket.off("error", onError);
      socket.off(readyEvent, onReady);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    socket.once("error", onError);
    socket.once(readyEvent, onReady);
  });
}

/** Opens TCP to an address that already passed the guard (no lookup happens here). */
export function connectChecked(target: CheckedTarget, port: number, signal: AbortSignal): Promise<net.Socket> {
  const socket = net.connect({ host: target.address, port, family: target.family, noDelay: true });
  return socketReady(socket, "connect", signal);
}

/** Starts TLS over a connected socket; SNI is the host name, never the address. */
export function startTls(socket: net.Socket, host: string, literal: boolean, options: GuardedTlsOptions, signal: AbortSignal): Promise<tls.TLSSocket> {
  const servername = options.servername ?? (literal ? undefined : host);
  const secure = tls.connect({ ...options, socket, ...(servername ? { servername } : {}) });
  return socketReady(secure, "secureConnect", signal);
}

/**
 * Resolves and checks `host` with the guard, then connects to the checked
 * address (TCP, optionally TLS) within one deadline.
 */
export async function guardedConnect(guard: OutboundGuard, options: GuardedConnectOptions): Promise<net.Socket> {
  const deadline = new Deadline(options.timeoutMs, options.signal);
  try {
    const target = await untilAborted(guard.resolve(options.host), deadline.signal);
    const socket = await connectChecked(target, options.port, deadline.signal);
    if (!options.tls) return socket;
    return await startTls(socket, options.host, target.literal, options.tls === true ? {} : options.tls, deadline.signal);
  } finally {
    deadline.clear();
  }
}
