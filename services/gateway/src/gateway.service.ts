import http, { type RequestListener } from "node:http";
import type { AddressInfo } from "node:net";
import type express from "express";
import { createApp } from "./app.js";
import type { GatewayDeps } from "./gateway.deps.js";
import { createQueueBootstrap } from "./queue-bootstrap.js";

export interface GatewayService {
  /** The Express pipeline alone. */
  readonly app: express.Express;
  /** What the HTTP server runs: the proxy-page fast path in front of `app`. */
  readonly handler: RequestListener;
  /** Listens on HOST:PORT; resolves with the bound address. */
  start(): Promise<AddressInfo>;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), closes idle sockets. */
  stop(graceMs?: number): Promise<void>;
}

export function createGatewayService(deps: GatewayDeps): GatewayService {
  const bootstrap = createQueueBootstrap(deps.queues, deps.logger);
  deps.health.register("startup_queue_bootstrap", async () => bootstrap.health());
  const { app, handler } = createApp(deps);
  const server = http.createServer(handler);
  server.keepAliveTimeout = 5_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 120_000;
  let started = false;
  let closing = false;
  // While stopping, a keep-alive socket is closed as soon as its response is
  // done instead of idling until keepAliveTimeout.
  server.on("request", (_req, res) => {
    res.once("finish", () => {
      if (closing) setImmediate(() => server.closeIdleConnections());
    });
  });

  return {
    app,
    handler,
    async start() {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(deps.config.PORT, deps.config.HOST, () => {
          server.off("error", reject);
          resolve();
        });
      });
      started = true;
      // The offline geo databases take about a second to load: warm them now, in the background,
      // rather than on the first upload (a failure is logged; the upload falls back as before).
      deps.geo.get().catch((error: unknown) => deps.logger.warn("geo databases not preloaded", { error }));
      await bootstrap.start();
      const address = server.address() as AddressInfo;
      deps.logger.info("gateway listening", { url: `http://${address.address}:${address.port}` });
      return address;
    },
    async stop(graceMs = 10_000) {
      bootstrap.stop();
      if (!started) return;
      started = false;
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const force = setTimeout(() => server.closeAllConnections(), graceMs);
      force.unref();
      await closed;
      clearTimeout(force);
    },
  };
}
