import { createDatabase, type Database } from "@roost/db";
import { OutboundGuard } from "@roost/net";
import { createLogger, createMetrics } from "@roost/observability";
import { createProducer, createRedisConnection, scrapeQueue } from "@roost/queue";
import { ensureFetches } from "@roost/scraping";
import { createTestDatabase, createTestRedis, peerBinariesAvailable, startNginxListServer, waitFor, type NginxListServer, type TestDatabase, type TestRedis } from "@roost/testkit";
import { scraperConfigFromEnv } from "./config/scraper.config.js";
import { createScraperService, type ScraperService } from "./scraper.service.js";

const describePeers = peerBinariesAvailable("nginx") ? describe : describe.skip;

/** The scraper service on the real queue: a source added and announced with `scrape-source` is scraped within seconds. */
describePeers("scraper service", () => {
  let database: TestDatabase;
  let db: Database;
  let redis: TestRedis;
  let lists: NginxListServer;
  let scraper: ScraperService;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = createDatabase({ databaseUrl: database.url });
    redis = createTestRedis();
    lists = await startNginxListServer({ host: "127.0.0.12" });
    await db.pool.query(
      `INSERT INTO global_config (id, config) VALUES (1, $1::jsonb) ON CONFLICT (id) DO UPDATE SET config = EXCLUDED.config`,
      [JSON.stringify({ scraper: { respect_robots_txt: true, timeout_ms: 3000 } })],
    );
    scraper = createScraperService({
      config: scraperConfigFromEnv({ QUEUE_PREFIX: redis.prefix.slice(0, -1) }),
      db,
      redisUrl: redis.url,
      logger: createLogger({ silent: true }),
      metrics: createMetrics({ defaultMetrics: false }),
      buildVersion: "9.9.9",
      // The guard stays on; only the list server's own address passes.
      guard: new OutboundGuard({ allowAddress: ({ address }) => address === lists.host }),
    });
    await scraper.start();
  }, 60_000);
  afterAll(async () => {
    await scraper?.stop();
    await lists?.stop();
    await redis?.cleanup();
    await db?.close();
    await database?.drop();
  });

  it("scrapes a new source for two followers with one fetch, and records each follower's outcome", async () => {
    await lists.put("robots.txt", "User-agent: *\nAllow: /\n");
    await lists.put("list.txt", "8.8.12.1:80\n8.8.12.2:81\n");
    const url = `${lists.origin}/list.txt`;
    const users = await db.pool.query<{ id: number }>("INSERT INTO users (email, password_hash) SELECT 's' || gen_random_uuid() || '@example.com', 'x' FROM generate_series(1, 2) RETURNING id");
    const sources: number[] = [];
    for (const { id } of users.rows) {
      sources.push((await db.pool.query<{ id: number }>("INSERT INTO scrape_sources (user_id, url) VALUES ($1, $2) RETURNING id", [id, url])).rows[0]?.id ?? 0);
    }
    await ensureFetches(db.pool, [url]);
    const connection = createRedisConnection(redis.url, "producer");
    const producer = createProducer(scrapeQueue, { connection, prefix: redis.prefix.slice(0, -1) });
    try {
      for (const [index, { id }] of users.rows.entries()) await producer.enqueue("scrape-source", { userId: id, sourceId: sources[index] ?? 0 }, { jobId: `ss-${sources[index]}` });
    } finally {
      await producer.close();
      connection.disconnect();
    }
    const rows = await waitFor(
      async () => {
        const { rows } = await db.pool.query<{ last_status: string | null; last_proxy_count: number | null }>(
          "SELECT last_status, last_proxy_count FROM scrape_sources WHERE id = ANY($1) AND last_status IS NOT NULL",
          [sources],
        );
        return rows.length === 2 ? rows : null;
      },
      { timeoutMs: 20_000, what: "both followers scraped" },
    );
    expect(rows).toEqual([
      { last_status: "ok", last_proxy_count: 2 },
      { last_status: "ok", last_proxy_count: 2 },
    ]);
    const listRequests = (await lists.requests()).filter((r) => r.path === "/list.txt");
    expect(listRequests).toHaveLength(1);
    // SCRAPER_PROJECT_URL is unset: the user agent names no page.
    expect(listRequests[0]?.userAgent).toBe("Roost/9.9.9");
  });
});
