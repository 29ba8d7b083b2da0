import type { Redis } from "ioredis";
import { z } from "zod";

/** What a rotator process registers about itself (DESIGN.md, "Processes and queues"). */
export const rotatorInstanceSchema = z.object({
  id: z.string().min(1),
  name: z.string(),
  region: z.string(),
  port_start: z.number().int(),
  port_end: z.number().int(),
  /** The host clients dial: ROTATING_PROXY_PUBLIC_HOST, else the listen host. */
  listen_host: z.string(),
  /** The interface its listeners bind (ROTATING_PROXY_LISTEN_HOST): decides whether a rotator without auth is an open proxy. */
  bind_host: z.string().optional(),
});
export type RotatorInstance = z.infer<typeof rotatorInstanceSchema>;

/** Published by the gateway when a user's rotators change (create, delete, account deletion). */
export const rotatorsChangedSchema = z.object({ instanceId: z.string().optional(), userId: z.number().int().optional() });
export type RotatorsChanged = z.infer<typeof rotatorsChangedSchema>;

/** Keys and channels under the queue prefix (`roost` → `roost:rotator-instances`). */
export function rotatorKeys(queuePrefix: string) {
  return {
    /** Sorted set: instance id scored by the time its registration expires, in ms. */
    instances: `${queuePrefix}:rotator-instances`,
    instance: (id: string) => `${queuePrefix}:rotator-instance:${id}`,
    changedChannel: `${queuePrefix}:rotators-changed`,
    checkedChannel: `${queuePrefix}:proxies-checked`,
  };
}

/** Registers or refreshes an instance for `ttlMs`; run on every heartbeat. */
export async function registerRotatorInstance(redis: Redis, queuePrefix: string, instance: RotatorInstance, ttlMs: number): Promise<void> {
  const keys = rotatorKeys(queuePrefix);
  await redis
    .multi()
    .set(keys.instance(instance.id), JSON.stringify(instance), "PX", ttlMs)
    .zadd(keys.instances, Date.now() + ttlMs, instance.id)
    .exec();
}

export async function unregisterRotatorInstance(redis: Redis, queuePrefix: string, id: string): Promise<void> {
  const keys = rotatorKeys(queuePrefix);
  await redis.multi().del(keys.instance(id)).zrem(keys.instances, id).exec();
}

/** Instances whose heartbeat has not expired; expired members are pruned on the way. */
export async function listLiveRotatorInstances(redis: Redis, queuePrefix: string): Promise<RotatorInstance[]> {
  const keys = rotatorKeys(queuePrefix);
  const now = Date.now();
  await redis.zremrangebyscore(keys.instances, "-inf", now);
  const ids = await redis.zrangebyscore(keys.instances, now, "+inf");
  if (ids.length === 0) return [];
  const values = await redis.mget(ids.map((id) => keys.instance(id)));
  return values.flatMap((value) => {
    if (!value) return [];
    const parsed = rotatorInstanceSchema.safeParse(JSON.parse(value));
    return parsed.success ? [parsed.data] : [];
  });
}
