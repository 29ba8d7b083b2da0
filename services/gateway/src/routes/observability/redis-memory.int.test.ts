import { Redis } from "ioredis";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { startOwnedRedis, type OwnedRedis } from "../../test-support/owned-redis.js";

/** /readyz and Redis' memory bound, on a redis-server of this test's own (its maxmemory is changed). */
describe("/readyz and Redis memory", () => {
  let owned: OwnedRedis;
  let probe: Redis;
  let h: GatewayHarness;
  beforeAll(async () => {
    owned = await startOwnedRedis();
    probe = new Redis(owned.url, { maxRetriesPerRequest: 1 });
    probe.on("error", () => undefined);
    h = await startGatewayHarness({ REDIS_URL: owned.url });
    await h.service.start();
  });
  afterAll(async () => {
    await h.close();
    probe.disconnect();
    await owned.close();
  });

  const usedMemory = async (): Promise<number> => Number(/^used_memory:(\d+)/m.exec(await probe.info("memory"))?.[1]);

  it("is degraded (still 200) when Redis nears its maxmemory, ready again with room", async () => {
    const ready = await h.http.get("/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe("ready");

    // A bound just above what is in use: past 90% of it.
    await probe.config("SET", "maxmemory", String(Math.ceil((await usedMemory()) / 0.95)));
    const near = await h.http.get("/readyz");
    expect(near.status).toBe(200);
    expect(near.body.status).toBe("degraded");
    expect(near.body.components.redis_memory).toEqual({ status: "degraded", details: { used_bytes: expect.any(Number), max_bytes: expect.any(Number) } });
    expect(near.body.components.redis).toEqual({ status: "up" });

    await probe.config("SET", "maxmemory", String(1024 * 1024 * 1024));
    const roomy = await h.http.get("/readyz");
    expect(roomy.body.status).toBe("ready");
    expect(roomy.body.components.redis_memory.details.max_bytes).toBe(1024 * 1024 * 1024);
  });
});
