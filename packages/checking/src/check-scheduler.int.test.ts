import { createDatabase, type Database } from "@roost/db";
import { createLogger } from "@roost/observability";
import { checkQueue, createProducer, createRedisConnection, type Producer } from "@roost/queue";
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from "@roost/testkit";
import { claimDueChecks } from "./check-schedule.repository.js";
import { runCheckTick } from "./check-scheduler.js";

/** The schedule lives in PostgreSQL (`next_check_at`); Redis only ever holds a bounded number of batches. */
describe("check scheduler", () => {
  let database: TestDatabase;
  let db: Database;
  let redis: TestRedis;
  let connection: ReturnType<typeof createRedisConnection>;
  let checks: Producer<typeof checkQueue>;
  const logger = createLogger({ silent: true });

  beforeAll(async () => {
    database = await createTestDatabase();
    db = createDatabase({ databaseUrl: database.url });
    redis = createTestRedis();
    connection = createRedisConnection(redis.url, "producer");
    checks = createProducer(checkQueue, { connection, prefix: redis.prefix.slice(0, -1) });
  });
  afterAll(async () => {
    await checks.close();
    connection.disconnect();
    await redis.cleanup();
    await db.close();
    await database.drop();
  });
  beforeEach(async () => {
    await checks.queue.obliterate({ force: true });
    await db.pool.query("DELETE FROM proxies");
  });

  const newUser = async (): Promise<number> =>
    (await db.pool.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ('u' || gen_random_uuid() || '@example.com', 'x') RETURNING id")).rows[0]?.id ?? 0;
  /** `count` proxies due now (oldest first in insertion order), addresses from `from`. */
  const addDue = async (userId: number, count: number, from = 0, dueSecondsAgo = 60): Promise<void> => {
    await db.pool.query(
      `INSERT INTO proxies (user_id, ip, port, next_check_at)
       SELECT $1, '8.' || ((g + $3) / 65536 % 256) || '.' || ((g + $3) / 256 % 256) || '.' || ((g + $3) % 256), 8080,
              now() - make_interval(secs => $4) + g * interval '1 microsecond'
         FROM generate_series(0, $2 - 1) g`,
      [userId, count, from, dueSecondsAgo],
    );
  };
  const queuedBatches = async () =>
    (await checks.queue.getJobs(["wait", "prioritized", "paused"])).filter((job) => job.name === "check-batch").map((job) => job.data as { userId: number; proxyIds: number[] });

  it("serves a user with ten new proxies in the first tick while another has ten thousand due", async () => {
    const big = await newUser();
    const small = await newUser();
    await addDue(big, 10_000, 0, 120);
    await addDue(small, 10, 20_000, 1);
    const result = await runCheckTick({ pool: db.pool, checks, logger }, { maxQueuedBatches: 4, batchSize: 250 });
    expect(result.batches).toBe(4);
    const batches = await queuedBatches();
    const mine = batches.filter((batch) => batch.userId === small);
    expect(mine).toHaveLength(1);
    expect(mine[0]?.proxyIds).toHaveLength(10);
    expect(batches.filter((batch) => batch.userId === big).every((batch) => batch.proxyIds.length === 250)).toBe(true);
  });

  it("keeps Redis to the bound however many proxies are due, and claims more once batches are taken", async () => {
    const userId = await newUser();
    await addDue(userId, 100_000);
    for (let tick = 0; tick < 5; tick++) await runCheckTick({ pool: db.pool, checks, logger }, { maxQueuedBatches: 8, batchSize: 500 });
    expect(await checks.queue.getJobCountByTypes("wait", "prioritized", "paused")).toBe(8);
    const leased = await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM proxies WHERE next_check_at > now()");
    expect(leased.rows[0]?.n).toBe(8 * 500);
    // Two batches taken by a checker: the next tick fills the room again, with proxies not claimed before.
    const before = new Set((await queuedBatches()).flatMap((batch) => batch.proxyIds));
    const taken = await checks.queue.getJobs(["prioritized"], 0, 1);
    for (const job of taken) await job.remove();
    const result = await runCheckTick({ pool: db.pool, checks, logger }, { maxQueuedBatches: 8, batchSize: 500 });
    expect(result).toMatchObject({ batches: 2, waiting: 6 });
    const fresh = (await queuedBatches()).flatMap((batch) => batch.proxyIds).filter((id) => !before.has(id));
    expect(fresh).toHaveLength(1000);
  });

  it("claims a batch again once its lease has run out (its job was lost)", async () => {
    const userId = await newUser();
    await addDue(userId, 30);
    const first = await claimDueChecks(db.pool, { users: 10, batchSize: 50, leaseMs: 300 });
    expect(first.flatMap((batch) => batch.proxyIds)).toHaveLength(30);
    // Within the lease nothing is due.
    expect(await claimDueChecks(db.pool, { users: 10, batchSize: 50, leaseMs: 300 })).toEqual([]);
    await db.pool.query("SELECT pg_sleep(0.4)");
    const again = await claimDueChecks(db.pool, { users: 10, batchSize: 50, leaseMs: 60_000 });
    expect(again.flatMap((batch) => batch.proxyIds).sort((a, b) => a - b)).toEqual(first.flatMap((batch) => batch.proxyIds).sort((a, b) => a - b));
  });

  it("never gives one proxy to two concurrent claims", async () => {
    const users = [await newUser(), await newUser(), await newUser()];
    for (const [k, userId] of users.entries()) await addDue(userId, 2_000, k * 10_000);
    for (let round = 0; round < 3; round++) {
      const claims = await Promise.all(Array.from({ length: 8 }, () => claimDueChecks(db.pool, { users: 3, batchSize: 100, leaseMs: 60_000 })));
      const ids = claims.flat().flatMap((batch) => batch.proxyIds);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.length).toBeGreaterThan(0);
    }
  });

  it("skips proxies whose account is gone", async () => {
    const userId = await newUser();
    await addDue(userId, 5);
    await db.pool.query("DELETE FROM users WHERE id = $1", [userId]);
    expect(await claimDueChecks(db.pool, { users: 10, batchSize: 50, leaseMs: 60_000 })).toEqual([]);
  });
});
