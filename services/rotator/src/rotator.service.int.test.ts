import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { createDatabase, type Database } from "@roost/db";
import { createLogger, createMetrics } from "@roost/observability";
import { createRedisConnection } from "@roost/queue";
import { hashRotatorPassword, listLiveRotatorInstances, rotatorKeys } from "@roost/rotation";
import { createTestDatabase, createTestRedis, freePort, startNginxJudge, startTarpit, startTinyproxy, waitFor, type NginxJudge, type ProxyPeer, type TestDatabase, type TestRedis } from "@roost/testkit";
import type { Redis } from "ioredis";

import { rotatorConfigFromEnv } from "./config/rotator.config.js";
import { createRotatorService, type RotatorService } from "./rotator.service.js";

const PASSWORD_KEY = "service-test-key";

function curlStatus(args: readonly string[]): Promise<{ exitCode: number; body: string }> {
  return new Promise((resolve) => {
    execFile("curl", ["-s", "--max-time", "5", ...args], (error, stdout) => resolve({ exitCode: error && typeof error.code === "number" ? error.code : 0, body: stdout }));
  });
}

describe("rotator service", () => {
  let database: TestDatabase;
  let db: Database;
  let redis: TestRedis;
  let publisher: Redis;
  let origin: NginxJudge;
  let upstream: ProxyPeer;
  let dataDir: string;
  let portStart: number;
  const services: RotatorService[] = [];
  const metrics = createMetrics({ defaultMetrics: false });

  const start = async (instanceId: string): Promise<RotatorService> => {
    const service = createRotatorService({
      config: rotatorConfigFromEnv({
        QUEUE_PREFIX: redis.prefix.slice(0, -1),
        DATA_DIR: dataDir,
        ALLOW_PRIVATE_NETWORK_TARGETS: "true",
        ROTATING_PROXY_PORT_START: String(portStart),
        ROTATING_PROXY_PORT_END: String(portStart + 9),
        ROTATOR_REFRESH_SECONDS: "3600",
        ROTATOR_RESPONSE_TIMEOUT_MS: "500",
      }),
      db,
      redisUrl: redis.url,
      logger: createLogger({ silent: true }),
      metrics,
      instance: { id: instanceId, name: "test-host", region: "default" },
      passwordKey: PASSWORD_KEY,
    });
    services.push(service);
    await service.start();
    return service;
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    db = createDatabase({ databaseUrl: database.url });
    redis = createTestRedis();
    publisher = createRedisConnection(redis.url, "client");
    dataDir = await mkdtemp(join(tmpdir(), "roost-rotator-svc-"));
    [origin, upstream] = await Promise.all([startNginxJudge(), startTinyproxy({ egressAddress: "127.0.0.2" })]);
    portStart = await freePort();
  }, 60_000);

  afterAll(async () => {
    await Promise.all(services.map((service) => service.stop()));
    await Promise.all([origin?.stop(), upstream?.stop()]);
    await publisher?.quit();
    await redis?.cleanup();
    await db?.close();
    await database?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  const newUser = async (): Promise<number> =>
    (await db.pool.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ('s' || gen_random_uuid() || '@example.com', 'x') RETURNING id")).rows[0]?.id ?? 0;

  it("registers, opens a listener after a change, refreshes its pool on a checked batch, closes it after delete, reopens after restart", async () => {
    const keys = rotatorKeys(redis.prefix.slice(0, -1));
    const first = await start("inst-1");
    const instances = await listLiveRotatorInstances(publisher, redis.prefix.slice(0, -1));
    expect(instances).toEqual([{ id: "inst-1", name: "test-host", region: "default", port_start: portStart, port_end: portStart + 9, listen_host: "127.0.0.1", bind_host: "127.0.0.1" }]);

    const userId = await newUser();
    // The port freePort checked: its neighbours are ephemeral ports an outgoing connection of this process may hold.
    const port = portStart;
    const rotatorId =
      (
        await db.pool.query<{ id: number }>(
          `INSERT INTO rotating_proxies (user_id, name, instance_id, protocol, listen_protocol, listen_port, auth_required, auth_username, auth_password, reputation_labels)
           VALUES ($1, 'main', 'inst-1', 'http', 'http', $2, true, 'alice', $3, '{}') RETURNING id`,
          [userId, port, hashRotatorPassword(PASSWORD_KEY, "pw")],
        )
      ).rows[0]?.id ?? 0;
    await publisher.publish(keys.changedChannel, JSON.stringify({ instanceId: "inst-1", userId }));
    await waitFor(() => first.listeners.has(rotatorId), { what: "listener opened" });
    const proxyUrl = `http://alice:pw@127.0.0.1:${port}`;
    // No alive proxy yet: the listener answers 503.
    expect((await curlStatus(["-o", "/dev/null", "-w", "%{http_code}", "-x", proxyUrl, origin.httpUrl])).body).toBe("503");

    await db.pool.query("INSERT INTO proxies (user_id, ip, port, alive, alive_protocols) VALUES ($1, '127.0.0.1', $2, true, 1)", [userId, upstream.port]);
    await publisher.publish(keys.checkedChannel, JSON.stringify({ userId, proxyIds: [1], removedIds: [] }));
    await waitFor(() => first.listeners.get(rotatorId)?.pool.size === 1, { what: "pool refreshed" });
    expect((await curlStatus(["-x", proxyUrl, origin.httpUrl])).body).toMatch(/REMOTE_ADDR = 127\.0\.0\.2/);

    const text = await metrics.registry.metrics();
    expect(text).toMatch(new RegExp(`^svc_rotating_proxy_requests_total\\{rotator="${rotatorId}",kind="request"\\} 2$`, "m"));
    expect(text).toMatch(new RegExp(`^svc_rotating_proxy_pool_size\\{rotator="${rotatorId}"\\} 1$`, "m"));
    await waitFor(async () => /^svc_rotating_proxy_bytes_total\{rotator="\d+",direction="out"\} [1-9]/m.test(await metrics.registry.metrics()), { what: "bytes counted" });

    await first.stop();
    const second = await start("inst-1");
    expect(second.listeners.has(rotatorId)).toBe(true);
    expect((await curlStatus(["-x", proxyUrl, origin.httpUrl])).body).toMatch(/REMOTE_ADDR = 127\.0\.0\.2/);

    // The proxy turns into one that accepts and never answers: 504 after ROTATOR_RESPONSE_TIMEOUT_MS, counted by reason.
    const tarpit = await startTarpit();
    try {
      await db.pool.query("UPDATE proxies SET port = $2 WHERE user_id = $1", [userId, tarpit.port]);
      await publisher.publish(keys.checkedChannel, JSON.stringify({ userId, proxyIds: [1], removedIds: [] }));
      await waitFor(() => second.listeners.get(rotatorId)?.pool.pick()?.port === tarpit.port, { what: "pool refreshed to the tarpit" });
      expect((await curlStatus(["-o", "/dev/null", "-w", "%{http_code}", "-x", proxyUrl, origin.httpUrl])).body).toBe("504");
      expect(await metrics.registry.metrics()).toMatch(/^svc_rotating_proxy_errors_total\{reason="response_timeout"\} 1$/m);
    } finally {
      await tarpit.stop();
    }

    await db.pool.query("DELETE FROM users WHERE id = $1", [userId]);
    await publisher.publish(keys.changedChannel, JSON.stringify({ userId }));
    await waitFor(() => !second.listeners.has(rotatorId), { what: "listener closed" });
    expect((await curlStatus(["-x", proxyUrl, origin.httpUrl])).exitCode).toBe(7);
  });
});
