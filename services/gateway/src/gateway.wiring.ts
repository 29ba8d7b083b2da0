import { createPasswordHasher, createRevocationStore, createTokenService } from "@roost/auth";
import type { Database } from "@roost/db";
import { createGeoLiteReloader, createStoredGeoResolver } from "@roost/geo";
import { createGlobalConfigStore, geoLiteUpdateWanted } from "@roost/global-config";
import { createHealthRegistry, type Logger, type Metrics } from "@roost/observability";
import { resolvePasswordKey } from "@roost/rotation";
import { checkQueue, createProducer, createRedisConnection, mailQueue, maintenanceQueue, scrapeQueue } from "@roost/queue";
import type { GatewayConfig } from "./config/gateway.config.js";
import { resolveJwtSecret } from "./config/jwt-secret.js";
import type { BuildInfo, GatewayDeps } from "./gateway.deps.js";

/** What the process (main.ts or all-in-one) shares between services. */
export interface SharedInfra {
  db: Database;
  redisUrl: string;
  logger: Logger;
  metrics: Metrics;
  build: BuildInfo;
  instanceId: string;
}

/** Builds the gateway's dependencies; `close()` releases what was opened here. */
export async function buildGatewayDeps(
  config: GatewayConfig,
  infra: SharedInfra,
): Promise<{ deps: GatewayDeps; close(): Promise<void> }> {
  const logger = infra.logger.child({ service: "gateway" });
  const prefix = `${config.QUEUE_PREFIX}:`;
  const redis = createRedisConnection(infra.redisUrl, "client", { commandTimeout: config.AUTH_REVOCATION_TIMEOUT_MS });
  const producerConnection = createRedisConnection(infra.redisUrl, "producer", { commandTimeout: config.QUEUE_HANDOFF_TIMEOUT_MS });
  const subscriber = createRedisConnection(infra.redisUrl, "subscriber");
  const queuePrefix = config.QUEUE_PREFIX;
  const queues = {
    maintenance: createProducer(maintenanceQueue, { connection: producerConnection, prefix: queuePrefix }),
    mail: createProducer(mailQueue, { connection: producerConnection, prefix: queuePrefix }),
    check: createProducer(checkQueue, { connection: producerConnection, prefix: queuePrefix }),
    scrape: createProducer(scrapeQueue, { connection: producerConnection, prefix: queuePrefix }),
  };
  const globalConfig = createGlobalConfigStore({ prisma: infra.db.prisma, redis, subscriber, prefix, logger });
  // A new or changed GeoLite key downloads now rather than at the next scheduled check.
  globalConfig.onSaved(async ({ config, previous }) => {
    if (geoLiteUpdateWanted(config, previous)) await queues.maintenance.enqueue("geolite-update", { force: true });
  });
  const geo = createStoredGeoResolver(infra.db.pool);
  const geoReloader = createGeoLiteReloader({ resolver: geo, subscriber, prefix, logger: logger.child({ component: "geo" }) });
  const revocation = createRevocationStore({
    prisma: infra.db.prisma,
    redis,
    subscriber,
    prefix,
    failOpen: config.AUTH_REVOCATION_FAIL_OPEN,
    cacheTtlMs: config.AUTH_REVOCATION_CACHE_TTL_MS,
    maxTokenTtlMinutes: 10080,
  });
  async function close(): Promise<void> {
    await revocation.stop().catch(() => undefined);
    await geoReloader.stop().catch(() => undefined);
    await globalConfig.stop().catch(() => undefined);
    await Promise.all(Object.values(queues).map((q) => q.close()));
    for (const connection of [redis, producerConnection, subscriber]) connection.disconnect();
  }
  let secret: string;
  let rotatorPasswordKey: string;
  try {
    secret = await resolveJwtSecret({ secret: config.JWT_SECRET, dataDir: config.DATA_DIR, logger });
    rotatorPasswordKey = await resolvePasswordKey(config.ROTATOR_PASSWORD_KEY, config.DATA_DIR);
  } catch (error) {
    await close();
    throw error;
  }
  const deps: GatewayDeps = {
    config,
    logger,
    metrics: infra.metrics,
    db: infra.db,
    redis,
    tokens: createTokenService({ secret, ttlMinutes: config.JWT_TTL_MINUTES }),
    revocation,
    hasher: createPasswordHasher({ memoryCostKiB: config.PASSWORD_HASH_MEMORY_KIB, timeCost: config.PASSWORD_HASH_TIME_COST }),
    health: createHealthRegistry(),
    queues,
    globalConfig,
    build: infra.build,
    instanceId: infra.instanceId,
    geo,
    rotatorPasswordKey,
  };
  deps.health.register("database", async () => {
    await infra.db.pool.query("SELECT 1");
    return { status: "up" };
  });
  deps.health.register("redis", async () => {
    await redis.ping();
    return { status: "up" };
  });
  try {
    await globalConfig.start();
    await revocation.start();
    await geoReloader.start();
  } catch (error) {
    // Nothing opened here may outlive a failed start.
    await close();
    throw error;
  }
  return { deps, close };
}
