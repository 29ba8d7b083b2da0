import { z } from "zod";
import { databaseLimitsEnv, envBool, envInt, envLogLevel, envNodeEnv, envOptionalInt, envOptionalString, envString, loadConfig } from "@roost/config";

/** Variables the checker reads (besides DATABASE_URL/REDIS_URL, given by main or all-in-one). */
export const checkerEnvSchema = z.object({
  QUEUE_PREFIX: envString("roost"),
  /** Lets the checker dial proxies and judges on private, loopback and link-local addresses. */
  ALLOW_PRIVATE_NETWORK_TARGETS: envBool(false),
  /** Hard cap on probes at once in this process, whatever `checker.concurrency` says (each holds a socket or two). */
  CHECKER_MAX_SOCKETS: envInt(4096, 1, 9000),
  /** Proxies per check-batch job. */
  CHECKER_BATCH_SIZE: envInt(250, 1, 5000),
  /** Most check-batch jobs waiting in Redis (all checkers together). */
  CHECKER_MAX_QUEUED_BATCHES: envInt(16, 1, 10_000),
  /** Seconds between direct probes of every judge in use (a judge that fails is skipped until it answers again). */
  CHECKER_JUDGE_HEALTH_SECONDS: envInt(30, 1, 3600),
  /** Seconds a claimed batch may take before its proxies are claimed again. */
  CHECKER_LEASE_SECONDS: envInt(600, 5, 86_400),
});

export type CheckerConfig = z.output<typeof checkerEnvSchema>;

export function checkerConfigFromEnv(env: Record<string, string | undefined> = process.env): CheckerConfig {
  return loadConfig(checkerEnvSchema, env);
}

/** Connection settings when the checker runs alone (all-in-one passes its own). */
export const checkerInfraSchema = z.object({
  DATABASE_URL: envOptionalString(),
  ...databaseLimitsEnv,
  REDIS_URL: envOptionalString(),
  /** Checked as the gateway checks it: a value other than development, production or test stops the boot. */
  NODE_ENV: envNodeEnv,
  LOG_LEVEL: envLogLevel(),
  /** Port for /metrics and /healthz when the checker runs alone; unset = no listener. */
  CHECKER_METRICS_PORT: envOptionalInt(0, 65535),
  /** Interface for that listener; 127.0.0.1. */
  CHECKER_METRICS_HOST: envString("127.0.0.1"),
});

export function checkerInfraFromEnv(env: Record<string, string | undefined> = process.env) {
  return loadConfig(checkerInfraSchema, env);
}
