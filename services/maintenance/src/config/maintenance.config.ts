import { z } from "zod";
import { envInt, envString, loadConfig } from "@roost/config";

/** Variables the maintenance worker reads (besides DATABASE_URL/REDIS_URL given by main). */
export const maintenanceEnvSchema = z.object({
  QUEUE_PREFIX: envString("roost"),
  /** Parallel maintenance jobs; 1. */
  MAINTENANCE_CONCURRENCY: envInt(1, 1, 16),
});

export type MaintenanceConfig = z.output<typeof maintenanceEnvSchema>;

export function maintenanceConfigFromEnv(env: Record<string, string | undefined> = process.env): MaintenanceConfig {
  return loadConfig(maintenanceEnvSchema, env);
}
