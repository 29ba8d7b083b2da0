import { PassThrough } from "node:stream";
import { createDatabase, type Database } from "@roost/db";
import { geoLiteChannel } from "@roost/geo";
import { OutboundGuard } from "@roost/net";
import { createLogger, createMetrics } from "@roost/observability";
import { createProducer, createRedisConnection, scrapeQueue } from "@roost/queue";
import { ensureFetches } from "@roost/scraping";
import {
  createTestDatabase,
  createTestRedis,
  mmdbWriterAvailable,
  peerBinariesAvailable,
  startNginxListServer,
  waitFor,
  writeTestMmdb,
  type NginxListServer,
  type TestDatabase,
  type TestRedis,
} from "@roost/testkit";
import { scraperConfigFromEnv } from "./config/scraper.config.js";
import { createScraperService, type ScraperService } from "./scraper.service.js";

const describePeers = peerBinariesAvailable("nginx") ? describe : describe.skip;
const itWithMmdbWriter = mmdbWriterAvailable() ? it : it.skip;

/** The scraper service on the real queue: a source added and announced with `scrape-source` is scraped within seconds. */
describePeers("scraper service", () => {
  let database: TestDatabase;
  let db: Database;
  let redis: TestRedis;
  let lists: NginxListServer;
  let scraper: ScraperService;
  // The service's log lines, parsed (JSON, one per line).
  const logLines: Record<string, unknown>[] = [];

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
      logger: createLogger({ stream: logStream(logLines), level: "info" }),
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

  /** Adds a source for a new user, announces it with `scrape-source`, and waits until it is scraped. */
  const scrapeNewSource = async (url: string): Promise<number> => {
    const user = (await db.pool.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ('s' || gen_random_uuid() || '@example.com', 'x') RETURNING id")).rows[0]?.id ?? 0;
    const source = (await db.pool.query<{ id: number }>("INSERT INTO scrape_sources (user_id, url) VALUES ($1, $2) RETURNING id", [user, url])).rows[0]?.id ?? 0;
    await ensureFetches(db.pool, [url]);
    const connection = createRedisConnection(redis.url, "producer");
    const producer = createProducer(scrapeQueue, { connection, prefix: redis.prefix.slice(0, -1) });
    try {
      await producer.enqueue("scrape-source", { userId: user, sourceId: source }, { jobId: `ss-${source}` });
    } finally {
      await producer.close();
      connection.disconnect();
    }
    await waitFor(async () => (await db.pool.query("SELECT 1 FROM scrape_sources WHERE id = $1 AND last_status IS NOT NULL", [source])).rowCount === 1, {
      timeoutMs: 20_000,
      what: "the source scraped",
    });
    return user;
  };

  itWithMmdbWriter("gives scraped proxies the stored GeoLite country, AS and type once the download is announced", async () => {
    await lists.put("robots.txt", "User-agent: *\nAllow: /\n");
    await lists.put("geo-before.txt", "8.8.13.1:80\n");
    await lists.put("geo-after.txt", "8.8.13.2:80\n");
    const geoOf = async (user: number) =>
      (await db.pool.query<{ country: string; asn: number | null; estimated_type: string }>("SELECT country, asn, estimated_type FROM proxies WHERE user_id = $1", [user])).rows;
    // Before any download: the shipped offline databases (8.8.0.0/16 is Google's, US).
    expect((await geoOf(await scrapeNewSource(`${lists.origin}/geo-before.txt`)))[0]?.country).toBe("US");
    // Stored as the maintenance job stores a verified download, then announced on the channel.
    const network = "8.8.13.0/24";
    const editions = {
      "GeoLite2-Country": writeTestMmdb("GeoLite2-Country", [{ network, data: { country: { iso_code: "SE" } } }]),
      "GeoLite2-ASN": writeTestMmdb("GeoLite2-ASN", [{ network, data: { autonomous_system_number: 64500, autonomous_system_organization: "CELLCO-PART" } }]),
    };
    for (const [edition, data] of Object.entries(editions)) {
      await db.pool.query("INSERT INTO geolite_databases (edition, data, sha256, built_at) VALUES ($1, $2, $3, now())", [edition, data, "0".repeat(64)]);
    }
    const publisher = createRedisConnection(redis.url, "client");
    try {
      await publisher.publish(geoLiteChannel(redis.prefix), String(Date.now()));
    } finally {
      publisher.disconnect();
    }
    await waitFor(() => logLines.some((line) => line.message === "geo databases reloaded" && line.reason === "announcement"), {
      timeoutMs: 20_000,
      what: "the scraper's geo databases reloaded",
    });
    expect(await geoOf(await scrapeNewSource(`${lists.origin}/geo-after.txt`))).toEqual([{ country: "SE", asn: 64500, estimated_type: "mobile" }]);
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

/** A stream for the logger that keeps each JSON line it writes. */
function logStream(lines: Record<string, unknown>[]): PassThrough {
  const stream = new PassThrough();
  let pending = "";
  stream.on("data", (chunk: Buffer) => {
    pending += chunk.toString("utf8");
    let newline: number;
    while ((newline = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      if (line.trim() !== "") lines.push(JSON.parse(line) as Record<string, unknown>);
    }
  });
  return stream;
}
