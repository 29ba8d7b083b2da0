import { randomBytes } from "node:crypto";
import request from "supertest";
import { createDatabase } from "@roost/db";
import { createLogger, createMetrics, type Metrics } from "@roost/observability";
import { gatewayConfigFromEnv } from "../config/gateway.config.js";
import type { GatewayDeps } from "../gateway.deps.js";
import { createGatewayService, type GatewayService } from "../gateway.service.js";
import { buildGatewayDeps } from "../gateway.wiring.js";
import type { GatewayHarness } from "./gateway.harness.js";

/**
 * A second gateway instance on the same database and Redis prefix as a
 * harness (what a scaled-out deployment looks like), with its own pool,
 * Redis connections and metrics registry.
 */
export interface GatewayPeer {
  deps: GatewayDeps;
  service: GatewayService;
  http: ReturnType<typeof request>;
  close(): Promise<void>;
}

export async function startGatewayPeer(
  of: GatewayHarness,
  options: { env?: Record<string, string>; metrics?: Metrics } = {},
): Promise<GatewayPeer> {
  const config = gatewayConfigFromEnv({
    JWT_SECRET: of.deps.config.JWT_SECRET ?? randomBytes(32).toString("hex"),
    QUEUE_PREFIX: of.deps.config.QUEUE_PREFIX,
    DATA_DIR: of.dataDir,
    DATABASE_URL: of.database.url,
    REDIS_URL: of.redis.url,
    PORT: "0",
    PASSWORD_HASH_MEMORY_KIB: "1024",
    PASSWORD_HASH_TIME_COST: "1",
    ...options.env,
  });
  const db = createDatabase({ databaseUrl: of.database.url });
  const { deps, close } = await buildGatewayDeps(config, {
    db,
    redisUrl: of.redis.url,
    logger: createLogger({ silent: true }),
    metrics: options.metrics ?? createMetrics({ defaultMetrics: false }),
    build: { buildVersion: "test-peer", builtAt: new Date(0).toISOString() },
    instanceId: `test-peer-${randomBytes(3).toString("hex")}`,
  });
  const service = createGatewayService(deps);
  return {
    deps,
    service,
    http: request(service.handler),
    async close() {
      await service.stop();
      await close();
      await db.close();
    },
  };
}
