import { randomUUID } from "node:crypto";
import { ConfigError, databaseLimits } from "@roost/config";
import { createDatabase, migrate } from "@roost/db";
import { loadBuildInfo, runService } from "@roost/lifecycle";
import { createMetrics } from "@roost/observability";
import { gatewayConfigFromEnv } from "./config/gateway.config.js";
import { createGatewayService } from "./gateway.service.js";
import { buildGatewayDeps } from "./gateway.wiring.js";

/** The gateway alone (split deployment): DATABASE_URL and REDIS_URL are required. */
runService({
  config: () => {
    const config = gatewayConfigFromEnv();
    const { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl } = config;
    if (!databaseUrl || !redisUrl) {
      throw new ConfigError([
        "DATABASE_URL and REDIS_URL are required when the gateway runs alone (npm start runs everything with embedded servers)",
      ]);
    }
    return { ...config, databaseUrl, redisUrl };
  },
  start: async ({ config, logger, shutdown }) => {
    const db = createDatabase({ databaseUrl: config.databaseUrl, applicationName: "roost-gateway", ...databaseLimits(config) });
    shutdown.add("database", "postgres pool", () => db.close());
    await migrate(config.databaseUrl);
    const build = loadBuildInfo();
    const wiring = { db, redisUrl: config.redisUrl, logger, metrics: createMetrics(), build, instanceId: randomUUID() };
    const { deps, close } = await buildGatewayDeps(config, wiring);
    shutdown.add("queues", "gateway connections", close);
    const gateway = createGatewayService(deps);
    shutdown.add("listeners", "gateway http", () => gateway.stop());
    await gateway.start();
  },
});
