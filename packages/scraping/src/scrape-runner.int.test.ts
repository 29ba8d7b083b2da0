import { randomBytes } from "node:crypto";
import { createDatabase, type Database } from "@roost/db";
import { createGeoResolver, type GeoDatabase } from "@roost/geo";
import { OutboundGuard, type ResolveAll } from "@roost/net";
import { createLogger } from "@roost/observability";
import { checkQueue, createProducer, createRedisConnection, scrapeQueue, type Producer } from "@roost/queue";
import {
  createTestDatabase,
  createTestRedis,
  peerBinariesAvailable,
  startNginxListServer,
  waitFor,
  type NginxListServer,
  type TestDatabase,
  type TestRedis,
} from "@roost/testkit";
import { RobotsCache } from "./robots-cache.js";
import { claimDueFetches, ensureFetches } from "./scrape-fetch.repository.js";
import { runScrapeSource, runScrapeTick, runScrapeUrl, type ScrapeDeps, type ScrapeSettings } from "./scrape-runner.js";

const describePeers = peerBinariesAvailable("nginx") ? describe : describe.skip;

/** Scrapes against a real nginx, the real database and Redis; the guard lets only the list server's address through. */
describePeers("scraping a source", () => {
  let database: TestDatabase;
  let db: Database;
  let redis: TestRedis;
  let connection: ReturnType<typeof createRedisConnection>;
  let checks: Producer<typeof checkQueue>;
  let scrapes: Producer<typeof scrapeQueue>;
  let lists: NginxListServer;
  /** On 127.0.0.11, which the guard refuses: its log proves nothing reached it. */
  let forbidden: NginxListServer;
  let settings: ScrapeSettings;
  let deps: ScrapeDeps;
  let geo: GeoDatabase;
  const userAgent = "Roost/test (+https://example.test/roost)";

  const makeDeps = (guard: OutboundGuard): ScrapeDeps => ({
    pool: db.pool,
    geo,
    checks,
    logger: createLogger({ silent: true }),
    allowPrivateTargets: false,
    guard,
    robots: new RobotsCache({ guard, userAgent, timeoutMs: 2000 }),
    userAgent,
    settings: () => settings,
  });

  beforeAll(async () => {
    database = await createTestDatabase();
    db = createDatabase({ databaseUrl: database.url });
    redis = createTestRedis();
    connection = createRedisConnection(redis.url, "producer");
    checks = createProducer(checkQueue, { connection, prefix: redis.prefix.slice(0, -1) });
    scrapes = createProducer(scrapeQueue, { connection, prefix: redis.prefix.slice(0, -1) });
    lists = await startNginxListServer({ host: "127.0.0.10" });
    forbidden = await startNginxListServer({ host: "127.0.0.11" });
    await forbidden.put("list.txt", "8.8.4.4:80\n");
    const guard = new OutboundGuard({ allowAddress: ({ address }) => address === lists.host });
    geo = await createGeoResolver().get();
    deps = makeDeps(guard);
  });
  beforeEach(() => {
    settings = {
      intervalSeconds: 3600,
      timeoutMs: 3000,
      maxBytes: 64 * 1024,
      respectRobots: false,
      websiteBlacklist: [],
      proxyLimits: { enabled: false, max_per_user: 1000, exclude_admins: true },
    };
  });
  afterAll(async () => {
    await Promise.all([lists?.stop(), forbidden?.stop()]);
    await checks?.close();
    await scrapes?.close();
    connection?.disconnect();
    await redis?.cleanup();
    await db?.close();
    await database?.drop();
  });

  const newUser = async (): Promise<number> =>
    (await db.pool.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ($1, 'x') RETURNING id", [`scrape-${randomBytes(6).toString("hex")}@example.com`])).rows[0]?.id ?? 0;
  const follow = async (userId: number, url: string): Promise<{ sourceId: number; fetchId: number }> => {
    const sourceId = (await db.pool.query<{ id: number }>("INSERT INTO scrape_sources (user_id, url) VALUES ($1, $2) RETURNING id", [userId, url])).rows[0]?.id ?? 0;
    const fetchId = (await ensureFetches(db.pool, [url])).get(url) ?? 0;
    return { sourceId, fetchId };
  };
  const sourceRow = async (sourceId: number) =>
    (
      await db.pool.query<{ last_status: string | null; last_error: string | null; last_proxy_count: number | null; last_scraped_at: Date | null; last_duration_ms: number | null }>(
        "SELECT last_status, last_error, last_proxy_count, last_scraped_at, last_duration_ms FROM scrape_sources WHERE id = $1",
        [sourceId],
      )
    ).rows[0];
  /** Proxies linked to the source, written back as `[scheme://]ip:port[:user:pass]`, and whether the last scrape saw them. */
  const linked = async (sourceId: number) =>
    (
      await db.pool.query<{ line: string; seen: boolean }>(
        `SELECT coalesce(p.scheme_hint || '://', '') || p.ip || ':' || p.port || CASE WHEN p.username <> '' THEN ':' || p.username || ':' || p.password ELSE '' END AS line,
                l.last_seen_at = s.last_scraped_at AS seen
           FROM proxy_sources l JOIN proxies p ON p.id = l.proxy_id JOIN scrape_sources s ON s.id = l.source_id
          WHERE l.source_id = $1 ORDER BY p.ip, p.port`,
        [sourceId],
      )
    ).rows;
  const hits = async (server: NginxListServer, path: string) => (await server.requests()).filter((request) => request.path === path);

  it("stores the proxies of text, HTML-table, JSON and credential lists, linked to the source and seen by this scrape", async () => {
    await lists.put("plain.txt", "8.8.1.1:80\n8.8.1.2:8080 # fast\nnot a proxy\n");
    await lists.put("table.html", "<html><body><table><tr><td>8.8.2.1</td><td>3128</td></tr><tr><td>8.8.2.2</td><td>81</td></tr></table></body></html>");
    await lists.put("list.json", JSON.stringify({ proxies: [{ ip: "8.8.3.1", port: 1080, protocol: "socks5" }, { host: "8.8.3.2", port: "82" }] }));
    await lists.put("creds.txt", "alice:pw@8.8.5.1:8000\n8.8.5.2:8001:bob:p:w\nhttp://carol:x@8.8.5.3:8002\n");
    const userId = await newUser();
    const expected: Record<string, string[]> = {
      "plain.txt": ["8.8.1.1:80", "8.8.1.2:8080"],
      "table.html": ["8.8.2.1:3128", "8.8.2.2:81"],
      "list.json": ["socks5://8.8.3.1:1080", "8.8.3.2:82"],
      "creds.txt": ["8.8.5.1:8000:alice:pw", "8.8.5.2:8001:bob:p:w", "http://8.8.5.3:8002:carol:x"],
    };
    for (const [file, lines] of Object.entries(expected)) {
      const { sourceId, fetchId } = await follow(userId, `${lists.origin}/${file}`);
      expect(await runScrapeUrl(deps, fetchId)).toEqual({ status: "ok", followers: 1 });
      expect(await linked(sourceId)).toEqual(lines.map((line) => ({ line, seen: true })));
      expect(await sourceRow(sourceId)).toMatchObject({ last_status: "ok", last_error: null, last_proxy_count: lines.length });
    }
    const stats = await db.pool.query<{ scraped: string }>("SELECT scraped::text FROM user_daily_stats WHERE user_id = $1", [userId]);
    expect(stats.rows[0]?.scraped).toBe("9");
    // New proxies are due for their first check at once.
    const due = await db.pool.query<{ n: string }>("SELECT count(*)::text AS n FROM proxies WHERE user_id = $1 AND next_check_at <= now()", [userId]);
    expect(due.rows[0]?.n).toBe("9");
  });

  it("asks again with the validators: an unchanged list costs one 304 and its proxies still count as seen", async () => {
    await lists.put("same.txt", "8.8.6.1:80\n");
    const userId = await newUser();
    const { sourceId, fetchId } = await follow(userId, `${lists.origin}/same.txt`);
    expect((await runScrapeUrl(deps, fetchId)).status).toBe("ok");
    const first = await sourceRow(sourceId);
    expect((await runScrapeUrl(deps, fetchId)).status).toBe("not_modified");
    expect((await hits(lists, "/same.txt")).map((hit) => hit.status)).toEqual([200, 304]);
    const second = await sourceRow(sourceId);
    expect(second).toMatchObject({ last_status: "not_modified", last_proxy_count: 1 });
    expect(second?.last_scraped_at?.getTime()).toBeGreaterThan(first?.last_scraped_at?.getTime() ?? Infinity);
    expect(await linked(sourceId)).toEqual([{ line: "8.8.6.1:80", seen: true }]);
  });

  it("fetches a URL followed by three users once and gives each of them the proxies", async () => {
    await lists.put("shared.txt", "8.8.7.1:80\n8.8.7.2:81\n");
    const users = [await newUser(), await newUser(), await newUser()];
    const follows = [];
    for (const userId of users) follows.push(await follow(userId, `${lists.origin}/shared.txt`));
    const fetchIds = new Set(follows.map((f) => f.fetchId));
    expect(fetchIds.size).toBe(1);
    expect(await runScrapeUrl(deps, follows[0]?.fetchId ?? 0)).toEqual({ status: "ok", followers: 3 });
    expect(await hits(lists, "/shared.txt")).toHaveLength(1);
    for (const { sourceId } of follows) {
      expect(await linked(sourceId)).toEqual([
        { line: "8.8.7.1:80", seen: true },
        { line: "8.8.7.2:81", seen: true },
      ]);
    }
  });

  it("hands a new follower the URL's last result at once, without fetching it again", async () => {
    await lists.put("handoff.txt", "8.8.8.1:80\n");
    const first = await follow(await newUser(), `${lists.origin}/handoff.txt`);
    await runScrapeUrl(deps, first.fetchId);
    const lateUser = await newUser();
    const late = await follow(lateUser, `${lists.origin}/handoff.txt`);
    expect(await runScrapeSource({ ...deps, scrapes }, lateUser, late.sourceId)).toBe("handed-off");
    expect(await hits(lists, "/handoff.txt")).toHaveLength(1);
    expect(await linked(late.sourceId)).toEqual([{ line: "8.8.8.1:80", seen: true }]);
    // Never fetched successfully (its last attempt failed): the URL is made due and the scheduler woken instead.
    const fresh = await follow(lateUser, `${lists.origin}/fresh.txt`);
    await db.pool.query("UPDATE scrape_fetches SET next_fetch_at = now() + interval '1 hour', last_fetched_at = now(), last_status = 'error' WHERE id = $1", [fresh.fetchId]);
    expect(await runScrapeSource({ ...deps, scrapes }, lateUser, fresh.sourceId)).toBe("due");
    expect(await scrapes.queue.getJob("scrape-wake")).toBeDefined();
    expect((await claimDueFetches(db.pool, { limit: 100, leaseMs: 60_000 })).map((claim) => claim.fetchId)).toContain(fresh.fetchId);
  });

  it("never fetches a path robots.txt disallows while robots are respected, and does when they are not", async () => {
    await lists.put("robots.txt", "User-agent: *\nDisallow: /private-\n");
    await lists.put("private-list.txt", "8.8.9.1:80\n");
    const userId = await newUser();
    const { sourceId, fetchId } = await follow(userId, `${lists.origin}/private-list.txt`);
    settings.respectRobots = true;
    expect((await runScrapeUrl(deps, fetchId)).status).toBe("robots_disallowed");
    expect(await sourceRow(sourceId)).toMatchObject({ last_status: "robots_disallowed", last_proxy_count: 0 });
    expect((await hits(lists, "/robots.txt")).map((hit) => hit.userAgent)).toEqual([userAgent]);
    expect(await hits(lists, "/private-list.txt")).toHaveLength(0);
    settings.respectRobots = false;
    expect((await runScrapeUrl(deps, fetchId)).status).toBe("ok");
    expect((await hits(lists, "/private-list.txt")).map((hit) => hit.userAgent)).toEqual([userAgent]);
  });

  it("asks for one origin's robots.txt once however many checks run at once", async () => {
    await lists.put("robots.txt", "User-agent: *\nDisallow: /private-\n");
    const before = (await hits(lists, "/robots.txt")).length;
    const cache = new RobotsCache({ guard: deps.guard, userAgent, timeoutMs: 2000 });
    const verdicts = await Promise.all(Array.from({ length: 5 }, (_, n) => cache.check(`${lists.origin}/${n % 2 === 0 ? "public" : "private-"}-${n}.txt`)));
    expect(verdicts.map((verdict) => verdict.allowed)).toEqual([true, false, true, false, true]);
    expect(await hits(lists, "/robots.txt")).toHaveLength(before + 1);
  });

  it("records a slow list, an oversize list, an HTTP error and too many redirects as errors, and follows a good redirect", async () => {
    await lists.put("slow.txt", "8.8.10.1:80\n".repeat(20));
    await lists.put("big.txt", "8.8.10.2:80\n".repeat(10_000));
    await lists.put("target.txt", "8.8.10.3:80\n");
    const userId = await newUser();
    settings.timeoutMs = 500;
    const cases: [string, RegExp | null][] = [
      [`${lists.origin}/slow/slow.txt`, /deadline/],
      [`${lists.origin}/big.txt`, /exceeds/],
      [`${lists.origin}/missing.txt`, /HTTP 404/],
      [lists.redirectTo(`${lists.origin}/target.txt`), null],
    ];
    let loop = `${lists.origin}/target.txt`;
    for (let hop = 0; hop < 6; hop += 1) loop = lists.redirectTo(loop);
    cases.push([loop, /redirects/]);
    for (const [url, error] of cases) {
      const { sourceId, fetchId } = await follow(userId, url);
      const result = await runScrapeUrl(deps, fetchId);
      const row = await sourceRow(sourceId);
      if (error === null) {
        expect(result.status).toBe("ok");
        expect(await linked(sourceId)).toEqual([{ line: "8.8.10.3:80", seen: true }]);
      } else {
        expect(result.status).toBe("error");
        expect(row?.last_error).toMatch(error);
        expect(row?.last_scraped_at).not.toBeNull();
      }
    }
  });

  it("refuses sources at loopback, private, link-local, metadata and IPv6 loopback addresses, a name resolving to loopback and a redirect to one: none is fetched", async () => {
    const resolveAll: ResolveAll = async (host) => (host === "lists.test" ? [{ address: lists.host, family: 4 }] : [{ address: forbidden.host, family: 4 }]);
    const guarded = makeDeps(new OutboundGuard({ resolveAll, allowAddress: ({ address }) => address === lists.host }));
    const userId = await newUser();
    const target = `http://${forbidden.host}:${forbidden.port}/list.txt`;
    const urls = [
      target,
      `http://127.0.0.1:${forbidden.port}/list.txt`,
      "http://10.0.0.1/list.txt",
      "http://169.254.1.1/list.txt",
      "http://169.254.169.254/latest/meta-data/",
      `http://[::1]:${forbidden.port}/list.txt`,
      `http://rebound.test:${forbidden.port}/list.txt`,
      lists.redirectTo(target).replace(lists.host, "lists.test"),
    ];
    for (const respectRobots of [false, true]) {
      settings.respectRobots = respectRobots;
      for (const url of urls) {
        const { sourceId, fetchId } = await follow(userId, `${url}${url.includes("?") ? "&" : "?"}robots=${respectRobots}`);
        expect([url, (await runScrapeUrl(guarded, fetchId)).status]).toEqual([url, "blocked"]);
        expect((await sourceRow(sourceId))?.last_error).toMatch(/refused/);
      }
    }
    expect(await forbidden.requests()).toEqual([]);
  });

  it("drops a URL that the website blacklist blocks without asking it", async () => {
    await lists.put("banned.txt", "8.8.11.1:80\n");
    const { sourceId, fetchId } = await follow(await newUser(), `http://lists.test:${lists.port}/banned.txt`);
    settings.websiteBlacklist = ["lists.test"];
    expect((await runScrapeUrl(deps, fetchId)).status).toBe("blocked");
    expect(await sourceRow(sourceId)).toMatchObject({ last_status: "blocked", last_error: "the website blacklist blocks this source" });
    expect(await hits(lists, "/banned.txt")).toHaveLength(0);
  });

  it("leaves a URL leased to a job alone when a new follower arrives, and that job serves both with one request", async () => {
    await lists.put("inflight.txt", "8.8.14.1:80\n");
    const url = `${lists.origin}/inflight.txt`;
    const first = await follow(await newUser(), url);
    await db.pool.query("UPDATE scrape_fetches SET next_fetch_at = now() + interval '1 day'");
    await db.pool.query("UPDATE scrape_fetches SET next_fetch_at = date_trunc('milliseconds', now()) WHERE id = $1", [first.fetchId]);
    expect((await claimDueFetches(db.pool, { limit: 10, leaseMs: 60_000 })).map((claim) => claim.fetchId)).toEqual([first.fetchId]);
    // A second user follows while the job is out: their scrape-source job leaves the leased URL alone.
    const lateUser = await newUser();
    const late = await follow(lateUser, url);
    expect(await runScrapeSource({ ...deps, scrapes }, lateUser, late.sourceId)).toBe("due");
    expect(await claimDueFetches(db.pool, { limit: 10, leaseMs: 60_000 })).toEqual([]);
    // The job was claimed before the second follower existed, yet serves both with one request.
    expect(await runScrapeUrl(deps, first.fetchId)).toEqual({ status: "ok", followers: 2 });
    expect(await hits(lists, "/inflight.txt")).toHaveLength(1);
    expect(await linked(late.sourceId)).toEqual([{ line: "8.8.14.1:80", seen: true }]);
  });

  it("claims a URL again once the lease of a job lost with its worker runs out, never before", async () => {
    await db.pool.query("UPDATE scrape_fetches SET next_fetch_at = now() + interval '1 day'");
    await lists.put("lost.txt", "8.8.13.1:80\n");
    const { sourceId, fetchId } = await follow(await newUser(), `${lists.origin}/lost.txt`);
    // A worker claims the URL and dies before running its job: nothing records it.
    expect((await claimDueFetches(db.pool, { limit: 10, leaseMs: 400 })).map((claim) => claim.fetchId)).toEqual([fetchId]);
    expect(await claimDueFetches(db.pool, { limit: 10, leaseMs: 60_000 })).toEqual([]);
    const reclaimed = await waitFor(async () => {
      const claims = await claimDueFetches(db.pool, { limit: 10, leaseMs: 60_000 });
      return claims.length > 0 ? claims : null;
    }, { timeoutMs: 5000, what: "the lease to run out" });
    expect(reclaimed.map((claim) => claim.fetchId)).toEqual([fetchId]);
    expect((await runScrapeUrl(deps, fetchId)).status).toBe("ok");
    expect(await sourceRow(sourceId)).toMatchObject({ last_status: "ok", last_proxy_count: 1 });
  });

  it("keeps the URL leased until every follower has the result, so a job dying in between loses no follower", async () => {
    await db.pool.query("UPDATE scrape_fetches SET next_fetch_at = now() + interval '1 day'");
    await lists.put("held.txt", "8.8.14.1:80\n");
    const userId = await newUser();
    const { sourceId, fetchId } = await follow(userId, `${lists.origin}/held.txt`);
    expect((await claimDueFetches(db.pool, { limit: 10, leaseMs: 600_000 })).map((claim) => claim.fetchId)).toEqual([fetchId]);
    const leased = async () =>
      (await db.pool.query<{ next_fetch_at: Date; last_status: string | null; last_fetched_at: Date | null }>("SELECT next_fetch_at, last_status, last_fetched_at FROM scrape_fetches WHERE id = $1", [fetchId])).rows[0];
    const lease = (await leased())?.next_fetch_at.getTime();
    // The user's row held: the follower's ingest waits, as a delivery does when its worker is killed mid-way.
    const holder = await db.pool.connect();
    let run: Promise<unknown> | undefined;
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM users WHERE id = $1 FOR UPDATE", [userId]);
      run = runScrapeUrl(deps, fetchId);
      await waitFor(async () => (await leased())?.last_status === "ok", { timeoutMs: 10_000, what: "the fetch recorded" });
      expect((await leased())?.next_fetch_at.getTime()).toBe(lease);
      expect((await sourceRow(sourceId))?.last_status).toBeNull();
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
    }
    await run;
    expect(await sourceRow(sourceId)).toMatchObject({ last_status: "ok", last_proxy_count: 1 });
    const done = await leased();
    expect((done?.next_fetch_at.getTime() ?? 0) - (done?.last_fetched_at?.getTime() ?? 0)).toBe(3600 * 1000);
  });

  it("a job whose claim was superseded does nothing: a stalled job run again after a new claim or after the fetch", async () => {
    await db.pool.query("UPDATE scrape_fetches SET next_fetch_at = now() + interval '1 day'");
    await lists.put("stalled.txt", "8.8.15.1:80\n");
    const { sourceId, fetchId } = await follow(await newUser(), `${lists.origin}/stalled.txt`);
    const [first] = await claimDueFetches(db.pool, { limit: 10, leaseMs: 300 });
    // The first claim's worker dies; once the lease has run out the URL is claimed anew.
    const [second] = await waitFor(async () => {
      const claims = await claimDueFetches(db.pool, { limit: 10, leaseMs: 60_000 });
      return claims.length > 0 ? claims : null;
    }, { timeoutMs: 5000, what: "the lease to run out" });
    expect([first?.fetchId, second?.fetchId]).toEqual([fetchId, fetchId]);
    expect(await runScrapeUrl(deps, fetchId, first?.leasedUntil)).toEqual({ status: "superseded", followers: 0 });
    expect(await runScrapeUrl(deps, fetchId, second?.leasedUntil)).toEqual({ status: "ok", followers: 1 });
    // Run once more (BullMQ's stalled-job recovery): the URL is no longer leased to it.
    expect(await runScrapeUrl(deps, fetchId, second?.leasedUntil)).toEqual({ status: "superseded", followers: 0 });
    expect(await hits(lists, "/stalled.txt")).toHaveLength(1);
    expect(await sourceRow(sourceId)).toMatchObject({ last_status: "ok", last_proxy_count: 1 });
  });

  it("forgets the fetch state of a URL nobody follows any more at the next tick", async () => {
    const { sourceId } = await follow(await newUser(), `${lists.origin}/forgotten.txt`);
    const kept = await follow(await newUser(), `${lists.origin}/kept.txt`);
    await db.pool.query("DELETE FROM scrape_sources WHERE id = $1", [sourceId]);
    await runScrapeTick({ pool: db.pool, scrapes, logger: createLogger({ silent: true }) }, { maxQueuedJobs: 0 });
    const { rows } = await db.pool.query<{ id: number }>("SELECT id FROM scrape_fetches WHERE url LIKE $1 ORDER BY id", [`${lists.origin}/%`]);
    expect(rows.map((row) => row.id)).toContain(kept.fetchId);
    expect((await db.pool.query("SELECT 1 FROM scrape_fetches WHERE url = $1", [`${lists.origin}/forgotten.txt`])).rowCount).toBe(0);
  });

  it("claims due URLs fairly with a lease and queues one job per URL with an id naming the claim", async () => {
    await db.pool.query("UPDATE scrape_fetches SET next_fetch_at = now() + interval '1 day'");
    await scrapes.queue.remove("scrape-wake");
    const busy = await newUser();
    const quiet = await newUser();
    for (let n = 0; n < 5; n += 1) await follow(busy, `${lists.origin}/busy-${n}.txt`);
    const theirs = await follow(quiet, `${lists.origin}/quiet.txt`);
    const claimed = await claimDueFetches(db.pool, { limit: 2, leaseMs: 60_000 });
    expect(claimed).toHaveLength(2);
    expect(claimed.map((claim) => claim.fetchId)).toContain(theirs.fetchId);
    // Leased: the next claim takes the others, never these.
    const next = await claimDueFetches(db.pool, { limit: 10, leaseMs: 60_000 });
    expect(next).toHaveLength(4);
    expect(next.some((claim) => claimed.some((taken) => taken.fetchId === claim.fetchId))).toBe(false);
    await db.pool.query("UPDATE scrape_fetches SET next_fetch_at = date_trunc('milliseconds', now()) WHERE url LIKE $1", [`${lists.origin}/busy-%`]);
    const tick = await runScrapeTick({ pool: db.pool, scrapes, logger: createLogger({ silent: true }) }, { maxQueuedJobs: 3 });
    expect(tick.queued).toBe(3);
    const again = await runScrapeTick({ pool: db.pool, scrapes, logger: createLogger({ silent: true }) }, { maxQueuedJobs: 3 });
    expect(again).toEqual({ queued: 0, waiting: 3 });
    const jobs = await scrapes.queue.getJobs(["prioritized", "wait"]);
    expect(jobs.filter((job) => job.name === "scrape-url").map((job) => job.id)).toEqual(expect.arrayContaining([expect.stringMatching(/^su-\d+-\d+$/)]));
  });
});
