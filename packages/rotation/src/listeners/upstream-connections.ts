import net from "node:net";

import { SocketInbox } from "./socket-inbox.js";

export interface UpstreamConnection {
  socket: net.Socket;
  inbox: SocketInbox;
}

interface Idle extends UpstreamConnection {
  /** performance.now() when it was released. */
  since: number;
}

export interface UpstreamConnectionsOptions {
  /**
   * Kept-alive connections kept per upstream. Fewer than the requests in flight to one upstream
   * would cost a connect and a close per request beyond them. @defaultValue 256
   */
  maxIdlePerUpstream?: number;
  /** An idle connection is closed after this, in ms. @defaultValue 30000 */
  idleMs?: number;
  track: (socket: net.Socket) => void;
}

/**
 * Kept-alive connections to HTTP upstreams, per `ip:port`, reused last-in
 * first-out. Idle ones are closed by a sweep, not a timer and a close
 * listener per connection armed and disarmed with every request.
 */
export class UpstreamConnections {
  private readonly idle = new Map<string, Idle[]>();
  private readonly maxIdle: number;
  private readonly idleMs: number;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly options: UpstreamConnectionsOptions) {
    this.maxIdle = options.maxIdlePerUpstream ?? 256;
    this.idleMs = options.idleMs ?? 30_000;
  }

  /**
   * An idle connection when one is left, else a new one within `timeoutMs`.
   * `fresh` skips idle ones: a request with a body cannot be sent again if a kept connection was closed meanwhile.
   */
  async acquire(ip: string, port: number, timeoutMs: number, fresh = false): Promise<{ connection: UpstreamConnection; reused: boolean }> {
    const kept = fresh ? undefined : this.takeIdle(ip, port);
    if (kept) return { connection: kept, reused: true };
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
    return { connection: { socket, inbox: new SocketInbox(socket) }, reused: false };
  }

  /** An idle kept-alive connection to `ip:port` when one is left (those the upstream closed meanwhile are dropped). */
  takeIdle(ip: string, port: number): UpstreamConnection | undefined {
    const list = this.idle.get(`${ip}:${port}`);
    for (let kept = list?.pop(); kept; kept = list?.pop()) {
      if (kept.inbox.idle) return { socket: kept.socket, inbox: kept.inbox };
      kept.socket.destroy();
    }
    return undefined;
  }

  release(ip: string, port: number, connection: UpstreamConnection): void {
    const key = `${ip}:${port}`;
    const list = this.idle.get(key) ?? [];
    if (list.length >= this.maxIdle || !connection.inbox.idle) {
      connection.socket.destroy();
      return;
    }
    list.push({ socket: connection.socket, inbox: connection.inbox, since: performance.now() });
    this.idle.set(key, list);
    if (!this.sweeper) {
      this.sweeper = setInterval(() => this.sweep(), Math.max(1, Math.ceil(this.idleMs / 2)));
      this.sweeper.unref();
    }
  }

  /** Closes connections idle for `idleMs` or more, and drops those the upstream closed meanwhile. */
  private sweep(): void {
    const oldest = performance.now() - this.idleMs;
    for (const [key, list] of this.idle) {
      const kept = list.filter((idle) => {
        const keep = idle.since > oldest && idle.inbox.idle;
        if (!keep) idle.socket.destroy();
        return keep;
      });
      if (kept.length > 0) this.idle.set(key, kept);
      else this.idle.delete(key);
    }
    if (this.idle.size === 0) this.stopSweeping();
  }

  private stopSweeping(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  destroyAll(): void {
    this.stopSweeping();
    for (const list of this.idle.values()) for (const idle of list.splice(0)) idle.socket.destroy();
    this.idle.clear();
  }
}
