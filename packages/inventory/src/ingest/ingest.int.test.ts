import { createLogger } from "@roost/observability";
import { CHECK_WAKE_JOB_ID, checkQueue, createProducer, createRedisConnection, type Producer } from "@roost/queue";
import { createTestRedis, type TestRedis } from "@roost/testkit";
import { startInventoryHarness, type InventoryHarness } from "../inventory.test-support.js";
import { ingest, UnknownSourceError, type IngestDeps } from "./ingest-session.js";

/** `ingest` as a service other than the gateway uses it: a pool, a check-queue producer, lines in any shape. */
describe("ingest", () => {
  let h: InventoryHarness;
  let redis: TestRedis;
  let connection: ReturnType<typeof createRedisConnection>;
  let checks: Producer<typeof checkQueue>;
  let deps: IngestDeps;

  beforeAll(async () => {
    h = await startInventoryHarness();
    redis = createTestRedis();
    connection = createRedisConnection(redis.url, "producer");
    checks = createProducer(checkQueue, { connection, prefix: redis.prefix.slice(0, -1) });
    deps = { pool: h.db.pool, geo: await h.geo(), checks, logger: createLogger({ silent: true }), allowPrivateTargets: false };
  });
  afterAll(async () => {
    await checks.close();
    connection.disconnect();
    await redis.cleanup();
    await h.close();
  });

  const newSource = async (userId: number, url: string) =>
    (await h.db.pool.query<{ id: number }>("INSERT INTO scrape_sources (user_id, url) VALUES ($1, $2) RETURNING id", [userId, url])).rows[0]?.id ?? 0;
  const linkedTo = async (sourceId: number) =>
    (
      await h.db.pool.query<{ proxy: string }>(
        "SELECT p.ip || ':' || p.port AS proxy FROM proxy_sources s JOIN proxies p ON p.id = s.proxy_id WHERE s.source_id = $1 ORDER BY p.id",
        [sourceId],
      )
    ).rows.map((r) => r.proxy);

  it("links every proxy of the input to the source, those the user already had included", async () => {
    const userId = await h.newUser();
    const first = await newSource(userId, "https://a.example.com/list.txt");
    const second = await newSource(userId, "https://b.example.com/list.txt");
    const a = await ingest(deps, userId, "8.8.8.1:80\n8.8.8.2:80", { sourceId: first, maxProxies: null });
    expect(a.newProxyIds).toHaveLength(2);
    // 8.8.8.2 is already the user's: it is linked to the second source too, and not stored again.
    const b = await ingest(deps, userId, ["8.8.8.2:80", "8.8.8.3:80"], { sourceId: second, maxProxies: null });
    expect(b.proxyCount).toBe(2);
    expect(b.newProxyIds).toHaveLength(1);
    expect(await linkedTo(first)).toEqual(["8.8.8.1:80", "8.8.8.2:80"]);
    expect(await linkedTo(second)).toEqual(["8.8.8.2:80", "8.8.8.3:80"]);
  });

  it("reads a stream whose chunks split lines and characters anywhere, across batches", async () => {
    const userId = await h.newUser();
    const text = Buffer.from("8.8.9.1:80:usé:p\n8.8.9.2:81\r\n8.8.9.3:82 # x\n8.8.9.1:80:usé:p\n8.8.9.4:83", "utf8");
    async function* chunks(): AsyncGenerator<Buffer | string> {
      for (let at = 0; at < text.length; at += 3) yield text.subarray(at, at + 3);
      yield "\n8.8.9.5:84";
    }
    const outcome = await ingest(deps, userId, chunks(), { maxProxies: null, batchSize: 2 });
    expect(outcome.details).toMatchObject({ submittedCount: 6, parsedCount: 6 });
    expect(outcome.proxyCount).toBe(5);
    const { rows } = await h.db.pool.query<{ username: string }>("SELECT username FROM proxies WHERE user_id = $1 AND ip = '8.8.9.1'", [userId]);
    expect(rows).toEqual([{ username: "usé" }]);
  });

  it("hands new proxies to checking: due now, and one wake-up of the check scheduler however many ingests", async () => {
    await checks.queue.remove(CHECK_WAKE_JOB_ID);
    const userId = await h.newUser();
    await ingest(deps, userId, "8.8.7.1:80\n8.8.7.2:80\n8.8.7.3:80", { maxProxies: null });
    await ingest(deps, userId, "8.8.7.4:80", { maxProxies: null });
    const { rows } = await h.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM proxies WHERE user_id = $1 AND next_check_at <= now()", [userId]);
    expect(rows[0]?.n).toBe(4);
    const jobs = await checks.queue.getJobs(["waiting", "delayed", "prioritized", "active"]);
    expect(jobs.map((job) => [job.id, job.name])).toEqual([[CHECK_WAKE_JOB_ID, "check-tick"]]);
    // Nothing new, nothing to wake: an ingest of owned proxies leaves the queue alone.
    await checks.queue.remove(CHECK_WAKE_JOB_ID);
    await ingest(deps, userId, "8.8.7.4:80", { maxProxies: null });
    expect(await checks.queue.getJob(CHECK_WAKE_JOB_ID)).toBeUndefined();
  });

  it("refuses another user's source and stores nothing", async () => {
    const owner = await h.newUser();
    const intruder = await h.newUser();
    const source = await newSource(owner, "https://c.example.com/list.txt");
    await expect(ingest(deps, intruder, "8.8.6.1:80", { sourceId: source, maxProxies: null })).rejects.toBeInstanceOf(UnknownSourceError);
    const { rows } = await h.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM proxies WHERE user_id = $1", [intruder]);
    expect(rows[0]?.n).toBe(0);
    expect(await linkedTo(source)).toEqual([]);
  });

  it("keeps proxy_limits: proxies beyond the room are not stored nor linked", async () => {
    const userId = await h.newUser();
    const source = await newSource(userId, "https://d.example.com/list.txt");
    const outcome = await ingest(deps, userId, "8.8.5.1:80\n8.8.5.2:80\n8.8.5.3:80", { sourceId: source, maxProxies: 2 });
    expect(outcome.details.limitExceededCount).toBe(1);
    expect(await linkedTo(source)).toEqual(["8.8.5.1:80", "8.8.5.2:80"]);
  });
});
