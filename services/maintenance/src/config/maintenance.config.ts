import { z } from "zod";
import { databaseLimitsEnv, envBool, envInt, envLogLevel, envNodeEnv, envOptionalString, envString, loadConfig } from "@roost/config";

/** Variables the maintenance worker reads (besides DATABASE_URL/REDIS_URL given by main). */
export const maintenanceEnvSchema = z.object({
  QUEUE_PREFIX: envString("roost"),
  /** Lets blacklist sources and GeoLite downloads reach private, loopback and link-local addresses; false. */
  ALLOW_PRIVATE_NETWORK_TARGETS: envBool(false),
  /** Parallel maintenance jobs; 1. */
  MAINTENANCE_CONCURRENCY: envInt(1, 1, 16),
});

export type MaintenanceConfig = z.output<typeof maintenanceEnvSchema>;

export function maintenanceConfigFromEnv(env: Record<string, string | undefined> = process.env): MaintenanceConfig {
  return loadConfig(maintenanceEnvSchema, env);
}

/** Connection settings when the worker runs alone (all-in-one passes its own). */
export const maintenanceInfraSchema = z.object({
  DATABASE_URL: envOptionalString(),
  ...databaseLimitsEnv,
  REDIS_URL: envOptionalString(),
  /** Checked as the gateway checks it: a value other than development, production or test stops the boot. */
  NODE_ENV: envNodeEnv,
  LOG_LEVEL: envLogLevel(),
});

export function maintenanceInfraFromEnv(env: Record<string, string | undefined> = process.env) {
  return loadConfig(maintenanceInfraSchema, env);
}
