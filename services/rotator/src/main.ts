import { ConfigError, databaseLimits } from "@roost/config";
import { createDatabase } from "@roost/db";
import { runService } from "@roost/lifecycle";
import { createMetrics, startMetricsListener } from "@roost/observability";
import { resolveInstanceIdentity, resolvePasswordKey } from "@roost/rotation";
import { rotatorConfigFromEnv, rotatorInfraFromEnv } from "./config/rotator.config.js";
import { createRotatorService } from "./rotator.service.js";

/** A rotator alone (split deployment): one instance, its port range and its listeners. */
runService({
  config: () => {
    const rotator = rotatorConfigFromEnv();
    const infra = rotatorInfraFromEnv();
    const { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl } = infra;
    if (!databaseUrl || !redisUrl) throw new ConfigError(["DATABASE_URL and REDIS_URL are required when the rotator runs alone"]);
    return { ...infra, databaseUrl, redisUrl, rotator };
  },
  start: async ({ config, logger, shutdown }) => {
    const metrics = createMetrics();
    const db = createDatabase({ databaseUrl: config.databaseUrl, applicationName: "roost-rotator", maxConnections: 4, ...databaseLimits(config) });
    shutdown.add("database", "postgres pool", () => db.close());
    const instance = await resolveInstanceIdentity({ id: config.rotator.ROTATOR_INSTANCE_ID, name: config.rotator.ROTATOR_INSTANCE_NAME, region: config.rotator.ROTATOR_INSTANCE_REGION, dataDir: config.rotator.DATA_DIR });
    const passwordKey = await resolvePasswordKey(config.rotator.ROTATOR_PASSWORD_KEY, config.rotator.DATA_DIR);
    const rotator = createRotatorService({ config: config.rotator, db, redisUrl: config.redisUrl, logger, metrics, instance, passwordKey });
    shutdown.add("listeners", "rotator", () => rotator.stop());
    if (config.ROTATOR_METRICS_PORT !== undefined) {
      const listener = await startMetricsListener({ metrics, health: { service: "rotator", instance_id: instance.id }, port: config.ROTATOR_METRICS_PORT, host: config.ROTATOR_METRICS_HOST });
      shutdown.add("listeners", "rotator metrics", () => listener.close());
    }
    await rotator.start();
  },
});
