import { randomUUID } from "node:crypto";
import { ConfigError, databaseLimits } from "@roost/config";
import { createDatabase } from "@roost/db";
import { loadBuildInfo, runService } from "@roost/lifecycle";
import { createMetrics, startMetricsListener } from "@roost/observability";
import { createCheckerService } from "./checker.service.js";
import { checkerConfigFromEnv, checkerInfraFromEnv } from "./config/checker.config.js";

/** The checker alone (split deployment); any number may run against one database and Redis. */
runService({
  config: () => {
    const checker = checkerConfigFromEnv();
    const infra = checkerInfraFromEnv();
    const { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl } = infra;
    if (!databaseUrl || !redisUrl) throw new ConfigError(["DATABASE_URL and REDIS_URL are required when the checker runs alone"]);
    return { ...infra, databaseUrl, redisUrl, checker };
  },
  start: async ({ config, logger, shutdown }) => {
    const metrics = createMetrics();
    const db = createDatabase({ databaseUrl: config.databaseUrl, applicationName: "roost-checker", maxConnections: 16, ...databaseLimits(config) });
    shutdown.add("database", "postgres pool", () => db.close());
    const checker = createCheckerService({ config: config.checker, db, redisUrl: config.redisUrl, logger, metrics, buildVersion: loadBuildInfo().buildVersion });
    shutdown.add("workers", "checker", () => checker.stop());
    if (config.CHECKER_METRICS_PORT !== undefined) {
      const listener = await startMetricsListener({ metrics, health: { service: "checker", instance_id: randomUUID() }, port: config.CHECKER_METRICS_PORT, host: config.CHECKER_METRICS_HOST });
      shutdown.add("listeners", "checker metrics", () => listener.close());
    }
    await checker.start();
  },
});
