import pg from "pg";
import { createTestDatabase, createTestRedis, startNginxListServer, waitFor, type NginxListServer, type TestDatabase, type TestRedis } from "@roost/testkit";
import { runServiceProcess, type ServiceProcess } from "./support/service-process.js";

/**
 * The scraper as its own process (services/scraper/dist/main.js), killed with
 * SIGKILL while it fetches two lists and delivers a third: a second scraper
 * scrapes every source, none lost, once the dead one's lease has run out
 * (SCRAPER_LEASE_SECONDS).
 */

const LEASE_SECONDS = 30;

describe("a scraper process killed mid-scrape", () => {
  let database: TestDatabase;
  let redis: TestRedis;
  let lists: NginxListServer;
  let db: pg.Pool;
  const children: ServiceProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    redis = createTestRedis();
    lists = await startNginxListServer({ host: "127.0.0.17" });
    db = new pg.Pool({ connectionString: database.url, max: 3 });
  }, 60_000);
  afterAll(async () => {
    for (const started of children) if (started.child.exitCode === null && started.child.signalCode === null) started.child.kill("SIGTERM");
    await Promise.all(children.map((started) => started.exited));
    await db?.end();
    await lists?.stop();
    await redis?.cleanup();
    await database?.drop();
  });

  const scraper = (): ServiceProcess => {
    const started = runServiceProcess("scraper", {
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: redis.prefix.slice(0, -1),
      // The list server is on loopback.
      ALLOW_PRIVATE_NETWORK_TARGETS: "true",
      SCRAPER_LEASE_SECONDS: String(LEASE_SECONDS),
    });
    children.push(started);
    return started;
  };

  it("loses no source: a second scraper scrapes them all once the lease has run out", async () => {
    // `/drip/` sends 64 bytes a second: each slow list is in flight for about 4 s.
    const files = { "a.txt": ["8.8.30.1:8080", "8.8.30.2:8080"], "b.txt": ["8.8.31.1:3128", "8.8.31.2:3128"], "c.txt": ["8.8.32.1:1080"] };
    for (const [name, lines] of Object.entries(files)) await lists.put(name, `${lines.join("\n")}\n`);
    const urls = { a: `${lists.origin}/drip/a.txt`, b: `${lists.origin}/drip/b.txt`, c: `${lists.origin}/c.txt` };
    await db.query("INSERT INTO global_config (id, config) VALUES (1, $1::jsonb) ON CONFLICT (id) DO UPDATE SET config = EXCLUDED.config", [JSON.stringify({ scraper: { respect_robots_txt: false, timeout_ms: 20_000 } })]);
    const users = (await db.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ('k1@example.com', 'x'), ('k2@example.com', 'x') RETURNING id")).rows.map((r) => r.id);
    // a.txt has two followers (one fetch for both), b.txt and c.txt one each.
    const follows: [number | undefined, string, number][] = [
      [users[0], urls.a, 2],
      [users[1], urls.a, 2],
      [users[0], urls.b, 2],
      [users[1], urls.c, 1],
    ];
    for (const [userId, url] of follows) await db.query("INSERT INTO scrape_sources (user_id, url) VALUES ($1, $2)", [userId, url]);

    // The second user's row held: c.txt is fetched at once but cannot be delivered, so the kill falls between the two.
    const holder = await db.connect();
    const first = scraper();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM users WHERE id = $1 FOR UPDATE", [users[1]]);
      await waitFor(
        async () => {
          if (first.child.exitCode !== null) throw new Error(`the scraper exited: ${first.output.stderr}`);
          const fetched = await db.query<{ last_status: string | null }>("SELECT last_status FROM scrape_fetches WHERE url = $1", [urls.c]);
          return fetched.rows[0]?.last_status === "ok" && (await lists.inFlight()) >= 2;
        },
        { timeoutMs: 30_000, what: "c.txt fetched and both slow lists in flight" },
      );
      first.child.kill("SIGKILL");
      expect(await first.exited).toBe("SIGKILL");
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
    }
    const killedAt = Date.now();
    const delivered = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM scrape_sources WHERE last_status IS NOT NULL");
    // The kill came before any list was delivered.
    expect(delivered.rows[0]?.n).toBe(0);

    scraper();
    const rows = await waitFor(
      async () => {
        const { rows } = await db.query<{ user_id: number; url: string; last_status: string | null; last_error: string | null; last_proxy_count: number | null; linked: number }>(
          `SELECT s.user_id, s.url, s.last_status, s.last_error, s.last_proxy_count, (SELECT count(*)::int FROM proxy_sources ps WHERE ps.source_id = s.id) AS linked
             FROM scrape_sources s ORDER BY s.id`,
        );
        return rows.every((row) => row.last_status !== null) ? rows : null;
      },
      // The lease, a tick (5 s) and a slow fetch, with room for a loaded machine.
      { timeoutMs: (LEASE_SECONDS + 30) * 1000, what: "every source scraped after the kill" },
    );
    expect(Date.now() - killedAt).toBeLessThan((LEASE_SECONDS + 30) * 1000);
    // A list fetched before the kill but not yet delivered is asked again with its validators: 304, its stored lines delivered.
    expect(rows.map((row) => ({ ...row, last_status: row.last_status === "not_modified" ? "ok" : row.last_status }))).toEqual(
      follows.map(([userId, url, count]) => ({ user_id: userId, url, last_status: "ok", last_error: null, last_proxy_count: count, linked: count })),
    );
    const proxies = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM proxies");
    expect(proxies.rows[0]?.n).toBe(7);
  }, 150_000);
});
