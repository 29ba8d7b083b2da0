import { ConfigError } from "@roost/config";
import { createDatabase } from "@roost/db";
import { createShutdownCoordinator } from "@roost/lifecycle";
import { createLogger } from "@roost/observability";
import { maintenanceConfigFromEnv, maintenanceInfraFromEnv } from "./config/maintenance.config.js";
import { createMaintenanceService } from "./maintenance.service.js";

/** The maintenance worker alone (split deployment). */
async function main(): Promise<void> {
  const config = maintenanceConfigFromEnv();
  const infra = maintenanceInfraFromEnv();
  const logger = createLogger({ level: infra.LOG_LEVEL });
  if (!infra.DATABASE_URL || !infra.REDIS_URL) {
    throw new ConfigError(["DATABASE_URL and REDIS_URL are required when the maintenance worker runs alone"]);
  }
  const shutdown = createShutdownCoordinator({ logger });
  const db = createDatabase({ databaseUrl: infra.DATABASE_URL, applicationName: "roost-maintenance" });
  shutdown.add("database", "postgres pool", () => db.close());
  const service = createMaintenanceService({ config, db, redisUrl: infra.REDIS_URL, logger });
  shutdown.add("workers", "maintenance", () => service.stop());
  await service.start();
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => void shutdown.run(signal).then((clean) => process.exit(clean ? 0 : 1)));
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
