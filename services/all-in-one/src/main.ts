import { randomUUID } from "node:crypto";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { databaseLimits } from "@roost/config";
import { createDatabase, migrate } from "@roost/db";
import { startEmbeddedPostgres, startLocalRedis } from "@roost/embedded";
import { loadBuildInfo, runService } from "@roost/lifecycle";
import { createMetrics } from "@roost/observability";
import { checkerConfigFromEnv, createCheckerService } from "@roost/service-checker";
import { resolveInstanceIdentity, resolvePasswordKey } from "@roost/rotation";
import { createRotatorService, rotatorConfigFromEnv } from "@roost/service-rotator";
import { buildGatewayDeps, createGatewayService, gatewayConfigFromEnv } from "@roost/service-gateway";
import { createMailerService, mailerConfigFromEnv } from "@roost/service-mailer";
import { createMaintenanceService, maintenanceConfigFromEnv } from "@roost/service-maintenance";
import { createScraperService, scraperConfigFromEnv } from "@roost/service-scraper";
import { allInOneConfigFromEnv, serviceEnv } from "./config/all-in-one.config.js";

/**
 * Every service in one process: the same factories a split deployment runs,
 * composed here. Without DATABASE_URL / REDIS_URL, an embedded PostgreSQL and
 * a local redis-server are started under DATA_DIR and stopped on exit.
 */
runService({
  config: () => allInOneConfigFromEnv(),
  shutdownDeadlineMs: 45_000,
  failurePrefix: "roost failed to start: ",
  start: async ({ config, logger, shutdown, stopping }) => {
    const dataDir = path.resolve(config.DATA_DIR);
    await mkdir(dataDir, { recursive: true });
    let databaseUrl = config.DATABASE_URL;
    if (!databaseUrl) {
      logger.info("starting embedded PostgreSQL", { dataDir });
      const postgres = await startEmbeddedPostgres({ dataDir, logger: logger.child({ component: "embedded-postgres" }) });
      shutdown.add("infrastructure", "embedded postgres", () => postgres.stop());
      databaseUrl = postgres.databaseUrl;
    }
    let redisUrl = config.REDIS_URL;
    if (!redisUrl) {
      logger.info("starting local redis-server", { dataDir });
      const redis = await startLocalRedis({ dataDir, logger: logger.child({ component: "local-redis" }), maxMemoryBytes: config.LOCAL_REDIS_MAX_MEMORY_BYTES });
      shutdown.add("infrastructure", "local redis", () => redis.stop());
      redisUrl = redis.redisUrl;
    }
    if (stopping()) return;

    const env = serviceEnv(databaseUrl, redisUrl);
    const migrated = await migrate(databaseUrl);
    if (migrated.applied.length > 0) logger.info("database migrated", { applied: migrated.applied });

    // The workers' pool; the gateway gets one of its own below, as in a split deployment.
    const db = createDatabase({ databaseUrl, applicationName: "roost-workers", maxConnections: 20, ...databaseLimits(config) });
    shutdown.add("database", "workers' postgres pool", () => db.close());
    const metrics = createMetrics();
    const build = loadBuildInfo();
    const instanceId = randomUUID();

    if (config.SERVICES.includes("maintenance")) {
      const maintenance = createMaintenanceService({ config: maintenanceConfigFromEnv(env), db, redisUrl, logger, longStatementTimeoutMs: config.DATABASE_LONG_STATEMENT_TIMEOUT_MS });
      shutdown.add("workers", "maintenance", () => maintenance.stop());
      await maintenance.start();
    }
    if (config.SERVICES.includes("mailer")) {
      // Stops in the workers phase, before the pool closes: it hands claimed rows back.
      const mailer = createMailerService({ config: mailerConfigFromEnv(env), db, redisUrl, logger, metrics });
      shutdown.add("workers", "mailer", () => mailer.stop());
      await mailer.start();
    }
    if (config.SERVICES.includes("checker")) {
      // Stops in the workers phase: running batches finish before the pool closes.
      const checker = createCheckerService({ config: checkerConfigFromEnv(env), db, redisUrl, logger, metrics, buildVersion: build.buildVersion });
      shutdown.add("workers", "checker", () => checker.stop());
      await checker.start();
    }
    if (config.SERVICES.includes("rotator")) {
      const rotatorConfig = rotatorConfigFromEnv({ ...env, DATA_DIR: dataDir });
      const instance = await resolveInstanceIdentity({ id: rotatorConfig.ROTATOR_INSTANCE_ID, name: rotatorConfig.ROTATOR_INSTANCE_NAME, region: rotatorConfig.ROTATOR_INSTANCE_REGION, dataDir });
      const passwordKey = await resolvePasswordKey(rotatorConfig.ROTATOR_PASSWORD_KEY, dataDir);
      const rotator = createRotatorService({ config: rotatorConfig, db, redisUrl, logger, metrics, instance, passwordKey });
      shutdown.add("listeners", "rotator", () => rotator.stop());
      await rotator.start();
    }
    if (config.SERVICES.includes("scraper")) {
      // Stops in the workers phase: running scrapes finish before the pool closes.
      const scraper = createScraperService({ config: scraperConfigFromEnv(env), db, redisUrl, logger, metrics, buildVersion: build.buildVersion });
      shutdown.add("workers", "scraper", () => scraper.stop());
      await scraper.start();
    }
    if (config.SERVICES.includes("gateway")) {
      const gatewayConfig = gatewayConfigFromEnv({ ...env, DATA_DIR: dataDir });
      // Check batches and scrapes holding connections never take the gateway's, and its page limits
      // (sized from its pool) count only connections it owns.
      const gatewayDb = createDatabase({ databaseUrl, applicationName: "roost-gateway", ...databaseLimits(config) });
      shutdown.add("database", "gateway's postgres pool", () => gatewayDb.close());
      const { deps, close } = await buildGatewayDeps(gatewayConfig, { db: gatewayDb, redisUrl, logger, metrics, build, instanceId });
      shutdown.add("queues", "gateway connections", close);
      const gateway = createGatewayService(deps);
      shutdown.add("listeners", "gateway http", () => gateway.stop());
      const address = await gateway.start();
      const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
      process.stdout.write(`Roost is running at http://${host}:${address.port}\n`);
    }
    logger.info("roost started", { services: config.SERVICES, buildVersion: build.buildVersion });
  },
});
