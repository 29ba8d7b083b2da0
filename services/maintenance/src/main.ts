import { ConfigError, databaseLimits } from "@roost/config";
import { createDatabase } from "@roost/db";
import { runService } from "@roost/lifecycle";
import { maintenanceConfigFromEnv, maintenanceInfraFromEnv } from "./config/maintenance.config.js";
import { createMaintenanceService } from "./maintenance.service.js";

/** The maintenance worker alone (split deployment). */
runService({
  config: () => {
    const maintenance = maintenanceConfigFromEnv();
    const infra = maintenanceInfraFromEnv();
    const { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl } = infra;
    if (!databaseUrl || !redisUrl) {
      throw new ConfigError(["DATABASE_URL and REDIS_URL are required when the maintenance worker runs alone"]);
    }
    return { ...infra, databaseUrl, redisUrl, maintenance };
  },
  start: async ({ config, logger, shutdown }) => {
    const db = createDatabase({ databaseUrl: config.databaseUrl, applicationName: "roost-maintenance", ...databaseLimits(config) });
    shutdown.add("database", "postgres pool", () => db.close());
    const service = createMaintenanceService({
      config: config.maintenance,
      db,
      redisUrl: config.redisUrl,
      logger,
      longStatementTimeoutMs: config.DATABASE_LONG_STATEMENT_TIMEOUT_MS,
    });
    shutdown.add("workers", "maintenance", () => service.stop());
    await service.start();
  },
});
