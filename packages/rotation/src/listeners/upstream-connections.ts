import net from "node:net";

import { SocketInbox } from "./socket-inbox.js";

export interface UpstreamConnection {
  socket: net.Socket;
  inbox: SocketInbox;
}

interface Idle extends UpstreamConnection {
  onClose: () => void;
}

export interface UpstreamConnectionsOptions {
  /** Kept-alive connections kept per upstream. @defaultValue 32 */
  maxIdlePerUpstream?: number;
  /** An idle connection is closed after this, in ms. @defaultValue 30000 */
  idleMs?: number;
  track: (socket: net.Socket) => void;
}

/** Kept-alive connections to HTTP upstreams, per `ip:port`, reused last-in first-out. */
export class UpstreamConnections {
  private readonly idle = new Map<string, Idle[]>();
  private readonly maxIdle: number;
  private readonly idleMs: number;

  constructor(private readonly options: UpstreamConnectionsOptions) {
    this.maxIdle = options.maxIdlePerUpstream ?? 32;
    this.idleMs = options.idleMs ?? 30_000;
  }

  /**
   * An idle connection when one is left, else a new one within `timeoutMs`.
   * `fresh` skips idle ones: a request with a body cannot be sent again if a kept connection was closed meanwhile.
   */
  async acquire(ip: string, port: number, timeoutMs: number, fresh = false): Promise<{ connection: UpstreamConnection; reused: boolean }> {
    const list = fresh ? undefined : this.idle.get(`${ip}:${port}`);
    for (let kept = list?.pop(); kept; kept = list?.pop()) {
      kept.socket.off("close", kept.onClose);
      kept.socket.setTimeout(0);
      if (kept.inbox.idle) return { connection: { socket: kept.socket, inbox: kept.inbox }, reused: true };
      kept.socket.destroy();
    }
    const socket = net.connect({ host: ip, port, noDelay: true });
    this.options.track(socket);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error(`connect to ${ip}:${port} timed out`)), timeoutMs);
      const fail = (error: Error): void => {
        clearTimeout(timer);
        socket.off("connect", done);
        socket.destroy();
        reject(error);
      };
      const done = (): void => {
        clearTimeout(timer);
        socket.off("error", fail);
        resolve();
      };
      socket.once("connect", done);
      socket.once("error", fail);
    });
    socket.on("error", () => socket.destroy());
    // The idle timer is armed by release() and disarmed by acquire(); its handler is attached once per socket.
    socket.on("timeout", () => socket.destroy());
    return { connection: { socket, inbox: new SocketInbox(socket) }, reused: false };
  }

  release(ip: string, port: number, connection: UpstreamConnection): void {
    const key = `${ip}:${port}`;
    const list = this.idle.get(key) ?? [];
    if (list.length >= this.maxIdle || !connection.inbox.idle) {
      connection.socket.destroy();
      return;
    }
    const idle: Idle = {
      ...connection,
      onClose: () => {
        const at = list.indexOf(idle);
        if (at !== -1) list.splice(at, 1);
      },
    };
    connection.socket.once("close", idle.onClose);
    connection.socket.setTimeout(this.idleMs);
    list.push(idle);
    this.idle.set(key, list);
  }

  destroyAll(): void {
    for (const list of this.idle.values()) for (const idle of list.splice(0)) idle.socket.destroy();
    this.idle.clear();
  }
}
