import { z } from "zod";
import { envBool, envInt, envString, loadConfig } from "@roost/config";

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
  /** Minutes a claimed batch may take before its proxies are claimed again. */
  CHECKER_LEASE_MINUTES: envInt(10, 1, 1440),
});

export type CheckerConfig = z.output<typeof checkerEnvSchema>;

export function checkerConfigFromEnv(env: Record<string, string | undefined> = process.env): CheckerConfig {
  return loadConfig(checkerEnvSchema, env);
}
