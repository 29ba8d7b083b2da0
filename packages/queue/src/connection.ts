import { Redis, type RedisOptions } from "ioredis";

/**
 * Producers fail fast when Redis is away (`enableOfflineQueue: false`) so a
 * request never hangs on a queue; workers wait forever for Redis
 * (`maxRetriesPerRequest: null`), as BullMQ requires for blocking calls.
 */
export function createRedisConnection(url: string, role: "producer" | "worker" | "client", extra: RedisOptions = {}): Redis {
  const base: RedisOptions =
    role === "worker"
      ? { maxRetriesPerRequest: null }
      : role === "producer"
        ? { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 }
        : { maxRetriesPerRequest: 1, connectTimeout: 2000 };
  const redis = new Redis(url, { ...base, ...extra });
  // Connection errors are reported through health checks; without a
  // listener ioredis would print every reconnect attempt.
  redis.on("error", () => undefined);
  return redis;
}
