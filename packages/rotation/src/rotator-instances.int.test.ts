import { createRedisConnection } from "@roost/queue";
import { createTestRedis, waitFor, type TestRedis } from "@roost/testkit";
import type { Redis } from "ioredis";

import { listLiveRotatorInstances, registerRotatorInstance, unregisterRotatorInstance, type RotatorInstance } from "./rotator-instances.js";

describe("rotator instance registry", () => {
  let redis: TestRedis;
  let client: Redis;
  const prefix = (): string => redis.prefix.slice(0, -1);
  const instance = (id: string): RotatorInstance => ({ id, name: id, region: "default", port_start: 1, port_end: 2, listen_host: "127.0.0.1", bind_host: "127.0.0.1" });

  beforeAll(() => {
    redis = createTestRedis();
    client = createRedisConnection(redis.url, "client");
  });

  afterAll(async () => {
    await client.quit();
    await redis.cleanup();
  });

  it("lists an instance while its heartbeat lives, and not after it expires or unregisters", async () => {
    await registerRotatorInstance(client, prefix(), instance("short"), 300);
    await registerRotatorInstance(client, prefix(), instance("long"), 60_000);
    await registerRotatorInstance(client, prefix(), instance("gone"), 60_000);
    expect((await listLiveRotatorInstances(client, prefix())).map((i) => i.id).sort()).toEqual(["gone", "long", "short"]);
    await unregisterRotatorInstance(client, prefix(), "gone");
    await waitFor(async () => (await listLiveRotatorInstances(client, prefix())).map((i) => i.id).join() === "long", { what: "the short heartbeat to expire" });
  });
});
