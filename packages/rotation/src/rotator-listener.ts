import net from "node:net";
import tls from "node:tls";

import type { OutboundGuard } from "@roost/net";

import { handleHttpClient } from "./listeners/http-wire.js";
import { handleSocksClient } from "./listeners/socks-proxy.js";
import type { TlsMaterial } from "./listeners/tls-certificate.js";
import { UpstreamConnections } from "./listeners/upstream-connections.js";
import type { RotatorDefinition } from "./rotator-repository.js";
import { UpstreamConnector } from "./upstream-connector.js";
import { UpstreamPool } from "./upstream-pool.js";

export interface RotatorObserver {
  request(rotatorId: number, kind: "request" | "tunnel"): void;
  upstreamFailure(rotatorId: number, reason: string): void;
  connectionOpened(rotatorId: number): void;
  connectionClosed(rotatorId: number): void;
  /**
   * Bytes client connections sent (`in`) and received (`out`), TLS included, since the last
   * report: every `bytesReportIntervalMs` while open and once more when one closes.
   */
  clientBytes(rotatorId: number, bytesIn: number, bytesOut: number): void;
}

export interface RotatorListenerOptions {
  definition: RotatorDefinition;
  host: string;
  guard: OutboundGuard;
  /** Key of the password HMAC (rotator-password.ts). */
  serverKey: string;
  /** Required for listen protocol `https`. */
  tls?: TlsMaterial;
  /** Per upstream attempt, in ms. @defaultValue 10000 */
  upstreamTimeoutMs?: number;
  /** A plain request's wait for the upstream's response head once the request is sent, in ms (then 504). @defaultValue 30000 */
  responseTimeoutMs?: number;
  /** A CONNECT or SOCKS tunnel without a byte either way for this long is closed, in ms. @defaultValue 600000 */
  tunnelIdleTimeoutMs?: number;
  /** How often open client connections' bytes are reported, in ms. @defaultValue 10000 */
  bytesReportIntervalMs?: number;
  /** Upstreams tried per request or tunnel. @defaultValue 3 */
  maxAttempts?: number;
  pool?: UpstreamPool;
  observer?: RotatorObserver;
}

/**
 * One rotator's listening port: owns its server, every client and upstream
 * socket, and its upstream pool. stop() closes the port and every tunnel.
 */
export class RotatorListener {
  readonly pool: UpstreamPool;
  private readonly sockets = new Set<net.Socket>();
  private readonly connections: UpstreamConnections;
  private server: net.Server | undefined;
  /** Open client connections and the bytes of each reported so far (read, written). */
  private readonly clients = new Map<net.Socket, [number, number]>();
  private bytesTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: RotatorListenerOptions) {
    this.pool = options.pool ?? new UpstreamPool();
    this.connections = new UpstreamConnections({ track: (socket) => this.track(socket) });
  }

  private track(socket: net.Socket): void {
    if (this.sockets.has(socket)) return;
    const id = this.options.definition.id;
    this.sockets.add(socket);
    this.options.observer?.connectionOpened(id);
    socket.once("close", () => {
      this.sockets.delete(socket);
      this.options.observer?.connectionClosed(id);
    });
  }

  get definition(): RotatorDefinition {
    return this.options.definition;
  }

  get port(): number {
    const address = this.server?.address();
    return typeof address === "object" && address ? address.port : this.options.definition.listenPort;
  }

  get openSockets(): number {
    return this.sockets.size;
  }

  async start(): Promise<void> {
    const { definition, observer } = this.options;
    const id = definition.id;
    const auth = { required: definition.authRequired, username: definition.authUsername, passwordHash: definition.authPasswordHash, serverKey: this.options.serverKey };
    const connector = new UpstreamConnector({
      guard: this.options.guard,
      protocol: definition.protocol,
      pool: this.pool,
      ...(this.options.upstreamTimeoutMs !== undefined ? { attemptTimeoutMs: this.options.upstreamTimeoutMs } : {}),
      ...(this.options.maxAttempts !== undefined ? { maxAttempts: this.options.maxAttempts } : {}),
      onUpstreamFailure: (reason) => observer?.upstreamFailure(id, reason),
    });
    const track = (socket: net.Socket): void => this.track(socket);
    const tunnelIdleTimeoutMs = this.options.tunnelIdleTimeoutMs ?? 600_000;
    const onRequest = (kind: "request" | "tunnel"): void => observer?.request(id, kind);
    let server: net.Server;
    if (definition.listenProtocol === "http" || definition.listenProtocol === "https") {
      const wire = {
        auth,
        protocol: definition.protocol,
        pool: this.pool,
        connector,
        guard: this.options.guard,
        connections: this.connections,
        upstreamTimeoutMs: this.options.upstreamTimeoutMs ?? 10_000,
        responseTimeoutMs: this.options.responseTimeoutMs ?? 30_000,
        tunnelIdleTimeoutMs,
        maxAttempts: this.options.maxAttempts ?? 3,
        track,
        onRequest,
        onUpstreamFailure: (reason: string) => observer?.upstreamFailure(id, reason),
      };
      server =
        definition.listenProtocol === "https"
          ? tls.createServer({ ...this.tlsMaterial(), handshakeTimeout: 10_000 }, (socket) => handleHttpClient(wire, socket))
          : net.createServer({ noDelay: true }, (socket) => handleHttpClient(wire, socket));
      // A TLS handshake that fails never reaches the handler; its raw socket is still tracked for stop().
      if (definition.listenProtocol === "https") server.on("connection", track);
    } else {
      const version = definition.listenProtocol === "socks5" ? 5 : 4;
      server = net.createServer({ noDelay: true }, (socket) => handleSocksClient({ version, auth, connector, track, onRequest, tunnelIdleTimeoutMs }, socket));
    }
    server.on("connection", (socket: net.Socket) => {
      this.clients.set(socket, [0, 0]);
      socket.once("close", () => {
        this.reportBytes(socket);
        this.clients.delete(socket);
      });
    });
    // A long tunnel's bytes show up while it is open, not only at its end.
    this.bytesTimer = setInterval(() => {
      for (const socket of this.clients.keys()) this.reportBytes(socket);
    }, this.options.bytesReportIntervalMs ?? 10_000);
    this.bytesTimer.unref();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host: this.options.host, port: definition.listenPort, exclusive: true }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    this.server = server;
  }

  private reportBytes(socket: net.Socket): void {
    const reported = this.clients.get(socket);
    if (!reported) return;
    const bytesIn = socket.bytesRead - reported[0];
    const bytesOut = socket.bytesWritten - reported[1];
    if (bytesIn === 0 && bytesOut === 0) return;
    reported[0] += bytesIn;
    reported[1] += bytesOut;
    this.options.observer?.clientBytes(this.options.definition.id, bytesIn, bytesOut);
  }

  /** Closes the port, destroys every open connection and tunnel; idempotent. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    clearInterval(this.bytesTimer);
    const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    for (const socket of this.sockets) socket.destroy();
    this.connections.destroyAll();
    await closed;
  }

  private tlsMaterial(): TlsMaterial {
    if (!this.options.tls) throw new Error(`rotator ${this.options.definition.id} listens on https but no certificate was given`);
    return this.options.tls;
  }
}
