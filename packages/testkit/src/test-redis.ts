import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";

import { testRedisUrl } from "./test-env.js";

// The shared Redis on this machine: tests never flush it, they use their own prefix.
export { testRedisUrl };

export interface TestRedis {
  url: string;
  /** Unique key prefix, ends with ':'; also usable as a BullMQ prefix. */
  prefix: string;
  /** Deletes every key under the prefix. */
  cleanup(): Promise<void>;
}

export function createTestRedis(): TestRedis {
  const prefix = `rt${randomBytes(5).toString("hex")}:`;
  return {
    url: testRedisUrl,
    prefix,
    async cleanup() {
      const redis = new Redis(testRedisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
      try {
        await redis.connect();
        let cursor = "0";
        do {
          const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
          cursor = next;
          if (keys.length > 0) await redis.del(...keys);
        } while (cursor !== "0");
      } finally {
        redis.disconnect();
      }
    },
  };
}
