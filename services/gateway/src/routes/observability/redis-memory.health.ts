import type { Redis } from "ioredis";
import type { ComponentHealth, HealthCheck } from "@roost/observability";

/** Share of Redis' `maxmemory` in use at which readiness turns `degraded`. */
export const REDIS_MEMORY_DEGRADED_RATIO = 0.9;

function infoField(info: string, name: string): number | undefined {
  const match = new RegExp(`^${name}:(\\d+)\\r?$`, "m").exec(info);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

/**
 * Readiness of Redis' memory: `degraded` once used memory reaches 90% of
 * `maxmemory`, since with `noeviction` every write (queues, rate limits,
 * revocations) fails at the bound. `up` when no bound is set.
 */
export function redisMemoryCheck(redis: Redis): HealthCheck {
  return async (): Promise<ComponentHealth> => {
    const info = await redis.info("memory");
    const usedBytes = infoField(info, "used_memory") ?? 0;
    const maxBytes = infoField(info, "maxmemory") ?? 0;
    const details = { used_bytes: usedBytes, max_bytes: maxBytes };
    if (maxBytes > 0 && usedBytes >= maxBytes * REDIS_MEMORY_DEGRADED_RATIO) return { status: "degraded", details };
    return { status: "up", details };
  };
}
