import { createDatabase, type Database } from "@roost/db";
import { createLogger } from "@roost/observability";
import { createProducer, createRedisConnection, maintenanceQueue } from "@roost/queue";
import { createTestDatabase, createTestRedis, waitFor, type TestDatabase, type TestRedis } from "@roost/testkit";
import { cleanupResetTokens, cleanupRevokedTokens, createMaintenanceService, maintainStatisticsPartitions, purgeDeletedAccounts } from "./index.js";

async function seedUser(db: Database, email: string, proxies: number): Promise<number> {
  const user = await db.prisma.user.create({ data: { email, passwordHash: "x" } });
  await db.pool.query(
    `INSERT INTO proxies (user_id, ip, port) SELECT $1, '10.0.' || (g / 250) || '.' || (g % 250), 8080 FROM generate_series(1, $2) g`,
    [user.id, proxies],
  );
  await db.pool.query(
    `INSERT INTO proxy_statistics (proxy_id, user_id, protocol, alive, attempt, response_time, anonymity_level, judge_url)
     SELECT id, user_id, 'http', true, 0, 100, 'elite', 'http://judge/' FROM proxies WHERE user_id = $1`,
    [user.id],
  );
  await db.pool.query(
    `INSERT INTO proxy_statistic_responses (statistic_id, created_at, body)
     SELECT s.id, s.created_at, 'body' FROM proxy_statistics s WHERE s.user_id = $1`,
    [user.id],
  );
  const source = await db.prisma.scrapeSource.create({ data: { userId: user.id, url: `https://lists.example/${email}` } });
  await db.pool.query(`INSERT INTO proxy_sources (proxy_id, source_id) SELECT id, $2 FROM proxies WHERE user_id = $1`, [user.id, source.id]);
  await db.prisma.userDailyStat.create({ data: { userId: user.id, day: new Date("2026-11-20"), checks: 5n } });
  return user.id;
}

async function countFor(db: Database, userId: number) {
  const { rows } = await db.pool.query<{ proxies: number; stats: number; responses: number; sources: number; daily: number; counts: number }>(
    `SELECT (SELECT count(*)::int FROM proxies WHERE user_id = $1) AS proxies,
            (SELECT count(*)::int FROM proxy_statistics WHERE user_id = $1) AS stats,
            (SELECT count(*)::int FROM proxy_statistic_responses r JOIN proxy_statistics s ON s.id = r.statistic_id WHERE s.user_id = $1) AS responses,
            (SELECT count(*)::int FROM scrape_sources WHERE user_id = $1) AS sources,
            (SELECT count(*)::int FROM user_daily_stats WHERE user_id = $1) AS daily,
            (SELECT count(*)::int FROM user_proxy_counts WHERE user_id = $1) AS counts`,
    [userId],
  );
  return rows[0];
}

describe("maintenance jobs", () => {
  let database: TestDatabase;
  let db: Database;
  beforeEach(async () => {
    database = await createTestDatabase();
    db = createDatabase({ databaseUrl: database.url });
  });
  afterEach(async () => {
    await db.close();
    await database.drop();
  });

  it("purges a deleted account's rows in batches and leaves other tenants alone", async () => {
    const gone = await seedUser(db, "gone@example.com", 1200);
    const kept = await seedUser(db, "kept@example.com", 300);
    await db.prisma.accountPurge.create({ data: { userId: gone } });
    await db.prisma.user.delete({ where: { id: gone } });

    // A tiny budget forces several resumable runs.
    let result = await purgeDeletedAccounts(db.pool, { batchSize: 250, budgetMs: 0 });
    expect(result.more).toBe(true);
    let runs = 1;
    while (result.more) {
      result = await purgeDeletedAccounts(db.pool, { batchSize: 250, budgetMs: 50 });
      runs += 1;
      expect(runs).toBeLessThan(100);
    }
    expect(await countFor(db, gone)).toEqual({ proxies: 0, stats: 0, responses: 0, sources: 0, daily: 0, counts: 0 });
    expect(await countFor(db, kept)).toMatchObject({ proxies: 300, stats: 300, responses: 300, sources: 1, daily: 1 });
    expect((await countFor(db, kept))?.counts).toBeGreaterThan(0);
    expect(await db.prisma.accountPurge.count()).toBe(0);
  });

  it("removes expired or used reset tokens and expired revocations only", async () => {
    const user = await db.prisma.user.create({ data: { email: "t@example.com", passwordHash: "x" } });
    const past = new Date(Date.now() - 60_000);
    const future = new Date(Date.now() + 60_000);
    await db.prisma.passwordResetToken.createMany({
      data: [
        { userId: user.id, tokenHash: "a", expiresAt: past },
        { userId: user.id, tokenHash: "b", expiresAt: future, usedAt: new Date() },
        { userId: user.id, tokenHash: "c", expiresAt: future },
      ],
    });
    await db.prisma.revokedToken.createMany({
      data: [
        { jti: "old", userId: user.id, expiresAt: past },
        { jti: "live", userId: user.id, expiresAt: future },
      ],
    });
    expect(await cleanupResetTokens(db.pool)).toEqual({ deleted: 2 });
    expect(await cleanupRevokedTokens(db.pool)).toEqual({ deleted: 1 });
    expect((await db.prisma.passwordResetToken.findMany()).map((t) => t.tokenHash)).toEqual(["c"]);
    expect((await db.prisma.revokedToken.findMany()).map((t) => t.jti)).toEqual(["live"]);
  });

  it("makes statistics partitions two days ahead and drops whole days past each retention, rows and bodies apart", async () => {
    await db.pool.query(`INSERT INTO global_config (id, config) VALUES (1, '{"checker": {"statistics_retention_days": 10, "response_retention_days": 3}}'::jsonb)
                         ON CONFLICT (id) DO UPDATE SET config = EXCLUDED.config`);
    const day = (offset: number) => new Date(Date.UTC(2031, 0, 20 + offset));
    // Twenty days of checks, one row and one body a day, as the checker writes them.
    for (let offset = -20; offset <= 0; offset++) {
      await maintainStatisticsPartitions(db.pool, day(offset));
      await db.pool.query(
        `WITH s AS (INSERT INTO proxy_statistics (proxy_id, user_id, protocol, alive, attempt, response_time, anonymity_level, judge_url, created_at)
                    VALUES (1, 1, 'http', true, 0, 1, 'elite', 'http://j/', $1) RETURNING id, created_at)
         INSERT INTO proxy_statistic_responses (statistic_id, created_at, body) SELECT id, created_at, 'b' FROM s`,
        [new Date(day(offset).getTime() + 3600_000)],
      );
    }
    const result = await maintainStatisticsPartitions(db.pool, day(0));
    expect(result.created).toEqual([]);
    const days = async (table: string) =>
      (await db.pool.query<{ d: string }>(`SELECT to_char(created_at AT TIME ZONE 'UTC', 'MM-DD') AS d FROM ${table} ORDER BY created_at`)).rows.map((r) => r.d);
    // Rows: today and the 10 days before (the first kept day is 2031-01-10); bodies: today and the 3 before.
    expect(await days("proxy_statistics")).toEqual(Array.from({ length: 11 }, (_, k) => `01-${String(10 + k).padStart(2, "0")}`));
    expect(await days("proxy_statistic_responses")).toEqual(["01-17", "01-18", "01-19", "01-20"]);
    const { rows } = await db.pool.query<{ n: number }>("SELECT (SELECT count(*) FROM proxy_statistics_default) + (SELECT count(*) FROM proxy_statistic_responses_default) AS n");
    expect(Number(rows[0]?.n)).toBe(0);
    const ahead = await db.pool.query<{ name: string }>("SELECT relname AS name FROM pg_class WHERE relname IN ('proxy_statistics_p20310121', 'proxy_statistics_p20310122') ORDER BY 1");
    expect(ahead.rows.map((r) => r.name)).toEqual(["proxy_statistics_p20310121", "proxy_statistics_p20310122"]);
  });

  describe("through the real queue", () => {
    let redis: TestRedis;
    beforeEach(() => {
      redis = createTestRedis();
    });
    afterEach(async () => {
      await redis.cleanup();
    });

    it("a purge job enqueued on BullMQ is consumed by the maintenance service", async () => {
      const gone = await seedUser(db, "queued@example.com", 50);
      await db.prisma.accountPurge.create({ data: { userId: gone } });
      await db.prisma.user.delete({ where: { id: gone } });
      const prefix = redis.prefix.slice(0, -1);
      const service = createMaintenanceService({
        config: { QUEUE_PREFIX: prefix, ALLOW_PRIVATE_NETWORK_TARGETS: false, MAINTENANCE_CONCURRENCY: 1 },
        db,
        redisUrl: redis.url,
        logger: createLogger({ silent: true }),
      });
      const connection = createRedisConnection(redis.url, "producer");
      const producer = createProducer(maintenanceQueue, { connection, prefix });
      await service.start();
      try {
        await waitFor(() => connection.status === "ready", { what: "redis connection" });
        await producer.enqueue("purge-deleted-accounts", {});
        await waitFor(async () => (await countFor(db, gone))?.proxies === 0 && (await db.prisma.accountPurge.count()) === 0, {
          timeoutMs: 20_000,
          what: "account purge",
        });
      } finally {
        await producer.close();
        connection.disconnect();
        await service.stop();
      }
    });
  });
});
