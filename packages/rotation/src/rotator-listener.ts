import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { Duplex } from "node:stream";

import type { OutboundGuard } from "@roost/net";

import { attachHttpProxy } from "./listeners/http-proxy.js";
import { handleSocksClient } from "./listeners/socks-proxy.js";
import type { TlsMaterial } from "./listeners/tls-certificate.js";
import type { RotatorDefinition } from "./rotator-repository.js";
import { UpstreamConnector } from "./upstream-connector.js";
import { UpstreamPool } from "./upstream-pool.js";

export interface RotatorObserver {
  request(rotatorId: number, kind: "request" | "tunnel"): void;
  upstreamFailure(rotatorId: number, reason: string): void;
  connectionOpened(rotatorId: number): void;
  connectionClosed(rotatorId: number): void;
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
  private readonly sockets = new Set<Duplex>();
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, scheduling: "lifo" });
  private server: net.Server | undefined;

  constructor(private readonly options: RotatorListenerOptions) {
    this.pool = options.pool ?? new UpstreamPool();
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
    const track = (socket: Duplex): void => {
      if (this.sockets.has(socket)) return;
      this.sockets.add(socket);
      observer?.connectionOpened(id);
      socket.once("close", () => {
        this.sockets.delete(socket);
        observer?.connectionClosed(id);
      });
    };
    const onRequest = (kind: "request" | "tunnel"): void => observer?.request(id, kind);
    let server: net.Server;
    if (definition.listenProtocol === "http" || definition.listenProtocol === "https") {
      const httpServer = definition.listenProtocol === "https" ? https.createServer(this.tlsMaterial()) : http.createServer();
      // Tunnels and kept-alive clients live as long as they are used.
      httpServer.requestTimeout = 0;
      httpServer.keepAliveTimeout = 30_000;
      attachHttpProxy(httpServer, {
        auth,
        protocol: definition.protocol,
        pool: this.pool,
        connector,
        guard: this.options.guard,
        agent: this.agent,
        ...(this.options.maxAttempts !== undefined ? { maxAttempts: this.options.maxAttempts } : {}),
        track,
        onRequest,
        onUpstreamFailure: (reason) => observer?.upstreamFailure(id, reason),
      });
      server = httpServer;
    } else {
      const version = definition.listenProtocol === "socks5" ? 5 : 4;
      server = net.createServer({ noDelay: true }, (socket) => handleSocksClient({ version, auth, connector, track, onRequest }, socket));
    }
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host: this.options.host, port: definition.listenPort, exclusive: true }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    this.server = server;
  }

  /** Closes the port, destroys every open connection and tunnel; idempotent. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    for (const socket of this.sockets) socket.destroy();
    this.agent.destroy();
    await closed;
  }

  private tlsMaterial(): TlsMaterial {
    if (!this.options.tls) throw new Error(`rotator ${this.options.definition.id} listens on https but no certificate was given`);
    return this.options.tls;
  }
}
