import { RedisConnection } from "bullmq";
import { Redis, type RedisOptions } from "ioredis";

/** Deadline of every command on a producer connection unless `extra.commandTimeout` says otherwise (ms). */
export const DEFAULT_PRODUCER_COMMAND_TIMEOUT_MS = 2_000;

/**
 * Producers fail fast when Redis is away (`enableOfflineQueue: false`) or
 * stalled (a command deadline, 2 s by default) so a request never hangs on a
 * queue; workers wait forever for Redis (`maxRetriesPerRequest: null`), as
 * BullMQ requires for blocking calls.
 */
export function createRedisConnection(url: string, role: "producer" | "worker" | "client" | "subscriber", extra: RedisOptions = {}): Redis {
  const base: RedisOptions =
    role === "worker"
      ? { maxRetriesPerRequest: null }
      : role === "subscriber"
        // Pub/sub only. No ready check: its INFO, sent late, fails on a connection already in subscriber mode.
        ? { maxRetriesPerRequest: null, enableReadyCheck: false }
      : role === "producer"
        ? { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, commandTimeout: DEFAULT_PRODUCER_COMMAND_TIMEOUT_MS }
        : { maxRetriesPerRequest: 1, connectTimeout: 2000 };
  const redis = new Redis(url, { ...base, ...extra });
  // Connection errors are reported through health checks; without a
  // listener ioredis would print every reconnect attempt.
  redis.on("error", () => undefined);
  return redis;
}

/**
 * The connection class BullMQ wraps our connections in. On close BullMQ
 * drops every listener of its wrapper, but the wrapper's start-up check
 * (INFO) may still be in flight on a connection we own; once we disconnect
 * it, that check fails and BullMQ emits 'error' with nobody listening, an
 * unhandled error. A service stopped right after it started hit exactly
 * that. A closed wrapper has nothing left to report, so it keeps a no-op
 * listener.
 */
export class ClosableConnection extends RedisConnection {
  override async close(force?: boolean): Promise<void> {
    try {
      await super.close(force);
    } finally {
      this.on("error", () => undefined);
    }
  }
}
