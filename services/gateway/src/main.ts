import { randomUUID } from "node:crypto";
import { ConfigError } from "@roost/config";
import { createDatabase, migrate } from "@roost/db";
import { createShutdownCoordinator, loadBuildInfo } from "@roost/lifecycle";
import { createLogger, createMetrics } from "@roost/observability";
import { gatewayConfigFromEnv } from "./config/gateway.config.js";
import { createGatewayService } from "./gateway.service.js";
import { buildGatewayDeps } from "./gateway.wiring.js";

/** The gateway alone (split deployment): DATABASE_URL and REDIS_URL are required. */
async function main(): Promise<void> {
  const config = gatewayConfigFromEnv();
  const logger = createLogger({ level: config.LOG_LEVEL });
  if (!config.DATABASE_URL || !config.REDIS_URL) {
    throw new ConfigError([
      "DATABASE_URL and REDIS_URL are required when the gateway runs alone (npm start runs everything with embedded servers)",
    ]);
  }
  const shutdown = createShutdownCoordinator({ logger });
  const db = createDatabase({ databaseUrl: config.DATABASE_URL, applicationName: "roost-gateway" });
  shutdown.add("database", "postgres pool", () => db.close());
  await migrate(config.DATABASE_URL);
  const { deps, close } = await buildGatewayDeps(config, {
    db,
    redisUrl: config.REDIS_URL,
    logger,
    metrics: createMetrics(),
    build: loadBuildInfo(),
    instanceId: randomUUID(),
  });
  shutdown.add("queues", "gateway connections", close);
  const gateway = createGatewayService(deps);
  shutdown.add("listeners", "gateway http", () => gateway.stop());
  await gateway.start();
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => void shutdown.run(signal).then((clean) => process.exit(clean ? 0 : 1)));
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
