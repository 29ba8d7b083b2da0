import type { Database } from "@roost/db";
import { geoLiteChannel } from "@roost/geo";
import { OutboundGuard } from "@roost/net";
import type { Logger } from "@roost/observability";
import { createConsumer, createProducer, createRedisConnection, maintenanceQueue, type Consumer } from "@roost/queue";
import type { MaintenanceConfig } from "./config/maintenance.config.js";
import { purgeDeletedAccounts } from "./jobs/account-purge.job.js";
import { refreshBlacklists } from "./jobs/blacklist-refresh.job.js";
import { maintainStatisticsPartitions } from "./jobs/statistics-retention.job.js";
import { createStoredGeoCache, rederiveProxyGeo } from "./jobs/geolite/geolite-rederive.job.js";
import { updateGeoLite } from "./jobs/geolite/geolite-update.job.js";
import { cleanupResetTokens, cleanupRevokedTokens } from "./jobs/token-cleanup.job.js";

export interface MaintenanceDeps {
  config: MaintenanceConfig;
  db: Database;
  redisUrl: string;
  logger: Logger;
  /** GeoLite downloads pass it; default from ALLOW_PRIVATE_NETWORK_TARGETS. */
  guard?: OutboundGuard;
  /** DATABASE_LONG_STATEMENT_TIMEOUT_MS: the deadline of bulk deletes over every user's proxies; default 30 min. */
  longStatementTimeoutMs?: number;
}

export interface MaintenanceService {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Consumes the maintenance queue (schedules are registered by the gateway's startup bootstrap). */
export function createMaintenanceService(deps: MaintenanceDeps): MaintenanceService {
  const logger = deps.logger.child({ service: "maintenance" });
  const workerConnection = createRedisConnection(deps.redisUrl, "worker");
  const producerConnection = createRedisConnection(deps.redisUrl, "producer");
  const producer = createProducer(maintenanceQueue, { connection: producerConnection, prefix: deps.config.QUEUE_PREFIX });
  let consumer: Consumer | null = null;
  const { pool } = deps.db;
  const guard = deps.guard ?? new OutboundGuard({ allowPrivateNetworkTargets: deps.config.ALLOW_PRIVATE_NETWORK_TARGETS });
  const storedGeo = createStoredGeoCache(pool);
  const geoLiteLogger = logger.child({ component: "geolite" });

  return {
    async start() {
      consumer = createConsumer(
        maintenanceQueue,
        {
          "cleanup-reset-tokens": async () => {
            const result = await cleanupResetTokens(pool);
            if (result.deleted > 0) logger.info("reset tokens cleaned", result);
            return result;
          },
          "cleanup-revoked-tokens": async () => {
            const result = await cleanupRevokedTokens(pool);
            if (result.deleted > 0) logger.info("revoked tokens cleaned", result);
            return result;
          },
          "statistics-partitions": async () => {
            const result = await maintainStatisticsPartitions(pool);
            if (result.created.length > 0 || result.dropped.length > 0) logger.info("statistics partitions maintained", result);
            return result;
          },
          "blacklist-refresh": async () => {
            const result = await refreshBlacklists(pool, guard, deps.longStatementTimeoutMs);
            for (const failure of result.failed) logger.warn("blacklist source not refreshed; its previous ranges stay", failure);
            if (result.refreshed.length > 0) logger.info("blacklists refreshed", { refreshed: result.refreshed, removedProxies: result.removedProxies });
            return result;
          },
          "purge-deleted-accounts": async (payload) => {
            const result = await purgeDeletedAccounts(pool, { batchSize: payload.batchSize });
            if (result.accountsFinished > 0 || result.more) logger.info("deleted accounts purged", { ...result });
            // Still rows left: continue at once instead of waiting for the next tick.
            if (result.more) await producer.enqueue("purge-deleted-accounts", payload);
            return result;
          },
          "geolite-update": async (payload) => {
            const result = await updateGeoLite(
              {
                pool,
                guard,
                logger: geoLiteLogger,
                announce: async () => {
                  await producerConnection.publish(geoLiteChannel(`${deps.config.QUEUE_PREFIX}:`), String(Date.now()));
                },
              },
              { force: payload.force ?? false },
            );
            if (result.outcome === "updated" || result.outcome === "removed") await producer.enqueue("geolite-rederive", {});
            return result;
          },
          "geolite-rederive": async (payload) => {
            const result = await rederiveProxyGeo(pool, () => storedGeo.get(), { batchSize: payload.batchSize });
            if (result.ran) geoLiteLogger.info("proxies re-derived from the geo databases", { ...result });
            if (result.more) await producer.enqueue("geolite-rederive", payload);
            return result;
          },
        },
        {
          connection: workerConnection,
          prefix: deps.config.QUEUE_PREFIX,
          concurrency: deps.config.MAINTENANCE_CONCURRENCY,
          onError: (error, job) => logger.error("maintenance job failed", { error, job: job?.name }),
        },
      );
      await consumer.worker.waitUntilReady();
    },
    async stop() {
      await consumer?.close();
      await producer.close();
      workerConnection.disconnect();
      producerConnection.disconnect();
    },
  };
}
