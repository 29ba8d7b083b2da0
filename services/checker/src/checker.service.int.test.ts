import { createDatabase, type Database } from "@roost/db";
import { createLogger, createMetrics } from "@roost/observability";
import { CHECK_WAKE_JOB_ID, checkQueue, createProducer, createRedisConnection } from "@roost/queue";
import { closedPort, createTestDatabase, createTestRedis, startNginxJudge, startTinyproxy, waitFor, type NginxJudge, type ProxyPeer, type TestDatabase, type TestRedis } from "@roost/testkit";
import { Redis } from "ioredis";
import { createCheckerService, type CheckerService } from "./checker.service.js";
import { checkerConfigFromEnv } from "./config/checker.config.js";

/** The checker service on the real queue: a wake-up after an upload gets every due proxy checked, fairly. */
describe("checker service", () => {
  let database: TestDatabase;
  let db: Database;
  let redis: TestRedis;
  let judge: NginxJudge;
  let proxy: ProxyPeer;
  let checker: CheckerService;
  const metrics = createMetrics({ defaultMetrics: false });

  beforeAll(async () => {
    database = await createTestDatabase();
    db = createDatabase({ databaseUrl: database.url });
    redis = createTestRedis();
    judge = await startNginxJudge();
    proxy = await startTinyproxy({ mode: "anonymous" });
    // Global judges: the local nginx; no IP lookup (the checker learns its address from a direct judge answer).
    await db.pool.query(
      `INSERT INTO global_config (id, config) VALUES (1, $1::jsonb)
       ON CONFLICT (id) DO UPDATE SET config = EXCLUDED.config`,
      [JSON.stringify({ checker: { judges: [{ url: judge.httpUrl, regex: "default" }], ip_lookup: "", concurrency: 256 } })],
    );
    checker = createCheckerService({
      config: checkerConfigFromEnv({ QUEUE_PREFIX: redis.prefix.slice(0, -1), ALLOW_PRIVATE_NETWORK_TARGETS: "true", CHECKER_BATCH_SIZE: "100", CHECKER_MAX_QUEUED_BATCHES: "4" }),
      db,
      redisUrl: redis.url,
      logger: createLogger({ silent: true }),
      metrics,
    });
    await checker.start();
  }, 60_000);
  afterAll(async () => {
    await checker?.stop();
    await proxy?.stop();
    await judge?.stop();
    await redis?.cleanup();
    await db?.close();
    await database?.drop();
  });

  const newUser = async (): Promise<number> => {
    const { rows } = await db.pool.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ('k' || gen_random_uuid() || '@example.com', 'x') RETURNING id");
    const userId = rows[0]?.id ?? 0;
    await db.pool.query(
      `INSERT INTO user_settings (user_id, http_protocol, https_protocol, socks4_protocol, socks5_protocol, timeout_ms, retries, use_https_for_socks,
                                  proxy_list_columns, scrape_source_proxy_columns, scrape_source_list_columns)
       VALUES ($1, true, false, false, false, 2000, 0, false, '{}', '{}', '{}')`,
      [userId],
    );
    await db.pool.query("INSERT INTO user_judges (user_id, url, regex, position) VALUES ($1, $2, 'default', 0)", [userId, judge.httpUrl]);
    return userId;
  };
  const wake = async (): Promise<void> => {
    const connection = createRedisConnection(redis.url, "producer");
    const producer = createProducer(checkQueue, { connection, prefix: redis.prefix.slice(0, -1) });
    try {
      await producer.enqueue("check-tick", {}, { jobId: CHECK_WAKE_JOB_ID, removeOnComplete: true, removeOnFail: true });
    } finally {
      await producer.close();
      connection.disconnect();
    }
  };
  const unchecked = async (userId: number): Promise<number> =>
    (await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM proxies WHERE user_id = $1 AND latest_check IS NULL", [userId])).rows[0]?.n ?? -1;

  it("checks a new proxy after a wake-up, publishes its id and writes into today's partition", async () => {
    const userId = await newUser();
    const listener = new Redis(redis.url);
    const published: string[] = [];
    await listener.subscribe(checker.checkedChannel);
    listener.on("message", (_channel, message: string) => published.push(message));
    try {
      const { rows } = await db.pool.query<{ id: number }>("INSERT INTO proxies (user_id, ip, port) VALUES ($1, '127.0.0.1', $2) RETURNING id", [userId, proxy.port]);
      const id = rows[0]?.id ?? 0;
      await wake();
      await waitFor(async () => (await unchecked(userId)) === 0, { timeoutMs: 15_000, what: "the proxy checked" });
      const { rows: row } = await db.pool.query<{ alive: boolean; anonymity_level: string }>("SELECT alive, anonymity_level FROM proxies WHERE id = $1", [id]);
      expect(row).toEqual([{ alive: true, anonymity_level: "anonymous" }]);
      await waitFor(() => published.length > 0, { what: "a message on the checked channel" });
      expect(JSON.parse(published[0] ?? "{}")).toEqual({ userId, proxyIds: [id], removedIds: [] });
      const { rows: partitions } = await db.pool.query<{ partition: string }>(
        "SELECT tableoid::regclass::text AS partition FROM proxy_statistics WHERE proxy_id = $1",
        [id],
      );
      expect(partitions).toEqual([{ partition: `proxy_statistics_p${new Date().toISOString().slice(0, 10).replaceAll("-", "")}` }]);
      const { rows: defaults } = await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM proxy_statistics_default");
      expect(defaults[0]?.n).toBe(0);
    } finally {
      listener.disconnect();
    }
  });

  it("checks ten new proxies of one user within seconds while another has ten thousand due", async () => {
    const crowded = await newUser();
    const small = await newUser();
    const dead = await closedPort();
    await db.pool.query(
      `INSERT INTO proxies (user_id, ip, port, next_check_at)
       SELECT $1, '127.' || (g / 65536 % 256) || '.' || (g / 256 % 256) || '.' || (g % 256 + 1), $2, now() - interval '1 hour'
         FROM generate_series(1, 10000) g`,
      [crowded, dead],
    );
    await wake();
    await waitFor(async () => (await unchecked(crowded)) < 10_000, { timeoutMs: 15_000, what: "the crowded list being checked" });
    await db.pool.query("INSERT INTO proxies (user_id, ip, port) SELECT $1, '127.0.0.1', $2 + g FROM generate_series(0, 9) g", [small, dead]);
    const started = Date.now();
    await wake();
    await waitFor(async () => (await unchecked(small)) === 0, { timeoutMs: 20_000, what: "the ten new proxies checked" });
    expect(Date.now() - started).toBeLessThan(10_000);
    // Redis held at most the bound of batches meanwhile; the crowded list keeps being worked off.
    expect(await unchecked(crowded)).toBeGreaterThanOrEqual(0);
  }, 60_000);
});
