import request from "supertest";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { peerBinariesAvailable, startNginxListServer, type NginxListServer } from "@roost/testkit";
import { startOwnedRedis, type OwnedRedis } from "../../test-support/owned-redis.js";
import { insertProxy } from "../../test-support/proxy-fixtures.js";

const describePeers = peerBinariesAvailable("nginx") ? describe : describe.skip;

/** The scraping-source API against a real gateway, database and queue. */
describe("scraping sources API", () => {
  let h: GatewayHarness;
  let admin: string;
  let alice: string;
  let bob: string;
  const as = (token: string) => ({ Authorization: `Bearer ${token}` });

  beforeAll(async () => {
    h = await startGatewayHarness({ API_UPLOAD_MAX_BODY_BYTES: "4096" });
    admin = (await h.register()).token;
    alice = (await h.register()).token;
    bob = (await h.register()).token;
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  const userIdOf = async (email: string) => (await h.db.pool.query<{ id: number }>("SELECT id FROM users WHERE email = $1", [email])).rows[0]?.id ?? 0;
  const sourcesOf = async (token: string) => (await h.http.get("/api/getScrapingSourcesPage/1?pageSize=100").set(as(token))).body as { id: number; url: string }[];

  it("adds http(s) sources from the text fields and a file, counts only new ones and announces each to the scraper", async () => {
    const first = await h.http
      .post("/api/scrapingSources")
      .set(as(alice))
      .field("scrapeSourceTextarea", "http://8.8.8.8/a.txt\n# a comment\n\nhttps://lists.invalid/b.txt#frag\nhttp://8.8.8.8/a.txt")
      .field("clipboardScrapeSources", "HTTP://8.8.8.8/c.txt");
    expect([first.status, first.body]).toEqual([200, { sourceCount: 3 }]);
    const again = await h.http
      .post("/api/scrapingSources")
      .set(as(alice))
      .attach("file", Buffer.from("http://8.8.8.8/a.txt\r\nhttps://8.8.4.4/d.json\r\n"), "sources.txt");
    expect([again.status, again.body]).toEqual([200, { sourceCount: 1 }]);
    const sources = await sourcesOf(alice);
    expect(sources.map((s) => s.url)).toEqual(["http://8.8.8.8/a.txt", "https://lists.invalid/b.txt", "http://8.8.8.8/c.txt", "https://8.8.4.4/d.json"]);
    const jobs = await h.deps.queues.scrape.queue.getJobs(["wait", "prioritized"]);
    expect(jobs.filter((job) => job.name === "scrape-source").map((job) => job.id).sort()).toEqual(sources.map((s) => `ss-${s.id}`).sort());
    const count = await h.http.get("/api/getScrapingSourcesCount").set(as(alice));
    expect([count.status, count.body]).toEqual([200, 4]);
    // Another user's list is their own.
    expect((await h.http.get("/api/getScrapingSourcesCount").set(as(bob))).body).toBe(0);
  });

  it("refuses the whole request when a source is unsafe or blocked, naming them, and saves nothing", async () => {
    const saved = await h.http.post("/api/saveSettings").set(as(admin)).send({ website_blacklist: ["blocked.example"] });
    expect(saved.status).toBe(200);
    const lines = [
      "http://8.8.8.8/fine.txt",
      "https://www.blocked.example/list.txt",
      "ftp://8.8.8.8/list.txt",
      "not a url",
      "http://user:pw@8.8.8.8/list.txt",
      "http://127.0.0.1/list.txt",
      "http://10.0.0.1/list.txt",
      "http://169.254.169.254/latest/meta-data/",
      "http://[::1]/list.txt",
      "http://localhost/list.txt",
    ];
    const before = (await h.http.get("/api/getScrapingSourcesCount").set(as(bob))).body as number;
    const res = await h.http.post("/api/scrapingSources").set(as(bob)).field("scrapeSourceTextarea", lines.join("\n"));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: expect.any(String),
      blocked_sources: ["https://www.blocked.example/list.txt"],
      unsafe_sources: expect.arrayContaining(["ftp://8.8.8.8/list.txt", "not a url", "http://user:pw@8.8.8.8/list.txt", "http://127.0.0.1/list.txt", "http://10.0.0.1/list.txt", "http://169.254.169.254/latest/meta-data/", "http://[::1]/list.txt", "http://localhost/list.txt"]),
      websiteBlacklist: ["blocked.example"],
    });
    expect(res.body.unsafe_sources).toHaveLength(8);
    expect((await h.http.get("/api/getScrapingSourcesCount").set(as(bob))).body).toBe(before);
    const empty = await h.http.post("/api/scrapingSources").set(as(bob)).field("scrapeSourceTextarea", "\n# nothing\n");
    expect([empty.status, empty.body]).toEqual([400, { error: expect.any(String) }]);
  });

  it("answers 413 over the upload limit and saves nothing", async () => {
    const big = Array.from({ length: 300 }, (_, n) => `http://8.8.8.8/big-${n}.txt`).join("\n");
    const res = await h.http.post("/api/scrapingSources").set(as(bob)).attach("file", Buffer.from(big), "big.txt");
    expect([res.status, res.body]).toEqual([413, { error: expect.any(String) }]);
    expect((await sourcesOf(bob)).some((s) => s.url.includes("big-"))).toBe(false);
  });

  it("pages, searches, details and lists a source's proxies, and hides them from other users", async () => {
    const bobUser = await userIdOf((await h.db.pool.query<{ email: string }>("SELECT email FROM users ORDER BY id OFFSET 2 LIMIT 1")).rows[0]?.email ?? "");
    const added = await h.http.post("/api/scrapingSources").set(as(bob)).field("scrapeSourceTextarea", "http://8.8.8.8/one.txt\nhttp://8.8.8.8/two.txt");
    expect(added.body).toEqual({ sourceCount: 2 });
    const [one, two] = await sourcesOf(bob);
    if (!one || !two) throw new Error("sources missing");
    const scrapedAt = new Date("2026-11-26T10:00:00.000Z");
    const alive = await insertProxy(h.db.pool, bobUser, { ip: "8.8.1.1", aliveOn: ["http"] });
    const dead = await insertProxy(h.db.pool, bobUser, { ip: "8.8.1.2", latestCheck: new Date() });
    const unknown = await insertProxy(h.db.pool, bobUser, { ip: "8.8.1.3" });
    await h.db.pool.query("INSERT INTO proxy_sources (proxy_id, source_id, last_seen_at) VALUES ($1, $4, $5), ($2, $4, $5), ($3, $4, now())", [alive, dead, unknown, one.id, scrapedAt]);
    await h.db.pool.query("UPDATE scrape_sources SET last_scraped_at = $2, last_status = 'ok', last_duration_ms = 42, last_proxy_count = 2 WHERE id = $1", [one.id, scrapedAt]);

    const page = await h.http.get("/api/getScrapingSourcesPage/1").set(as(bob));
    expect(page.status).toBe(200);
    expect(page.body[0]).toEqual({ id: one.id, url: one.url, proxy_count: 3, alive_count: 1, dead_count: 1, unknown_count: 1, added_at: expect.any(String), last_scraped_at: scrapedAt.toISOString() });
    expect((await h.http.get("/api/getScrapingSourcesPage/1?search=TWO").set(as(bob))).body.map((s: { id: number }) => s.id)).toEqual([two.id]);
    expect((await h.http.get("/api/getScrapingSourcesPage/2?pageSize=1").set(as(bob))).body.map((s: { id: number }) => s.id)).toEqual([two.id]);
    expect((await h.http.get("/api/getScrapingSourcesPage/0").set(as(bob))).status).toBe(400);

    const detail = await h.http.get(`/api/scrapingSources/${one.id}`).set(as(bob));
    expect([detail.status, detail.body]).toEqual([
      200,
      expect.objectContaining({ id: one.id, proxy_count: 3, alive_count: 1, last_status: "ok", last_duration_ms: 42, last_error: null, found_by_last_scrape: 2 }),
    ]);
    const proxies = await h.http.get(`/api/scrapingSources/${one.id}/proxies?pageSize=2`).set(as(bob));
    expect(proxies.status).toBe(200);
    expect(proxies.body.total).toBe(3);
    expect(proxies.body.proxies.map((p: { ip: string }) => p.ip)).toEqual(["8.8.1.1", "8.8.1.2"]);
    const alivePage = await h.http.get(`/api/scrapingSources/${one.id}/proxies?status=alive`).set(as(bob));
    expect(alivePage.body).toEqual({ proxies: [expect.objectContaining({ ip: "8.8.1.1" })], total: 1 });
    expect((await h.http.get(`/api/scrapingSources/${two.id}/proxies`).set(as(bob))).body).toEqual({ proxies: [], total: 0 });

    // Tenant isolation: another user's ids are 404, and a delete of them deletes nothing.
    for (const path of [`/api/scrapingSources/${one.id}`, `/api/scrapingSources/${one.id}/proxies`, "/api/scrapingSources/99999999", "/api/scrapingSources/abc"]) {
      const res = await h.http.get(path).set(as(alice));
      expect([path, res.status, res.body]).toEqual([path, 404, { error: expect.any(String) }]);
    }
    const foreign = await h.http.delete("/api/scrapingSources").set(as(alice)).send([one.id, two.id]);
    expect([foreign.status, foreign.body]).toEqual([200, "Deleted 0 scraping sources."]);
    const deleted = await h.http.delete("/api/scrapingSources").set(as(bob)).send([one.id, two.id, one.id]);
    expect([deleted.status, deleted.body]).toEqual([200, "Deleted 2 scraping sources."]);
    expect((await h.http.delete("/api/scrapingSources").set(as(bob)).send({ ids: [1] })).status).toBe(400);
  });

  it("attaches and queues the global scrape_sites for a new user at registration", async () => {
    const saved = await h.http
      .post("/api/saveSettings")
      .set(as(admin))
      .send({ scraper: { scrape_sites: ["http://8.8.8.8/default.txt", "https://8.8.4.4/default.json"] } });
    expect(saved.status).toBe(200);
    const res = await h.http.post("/api/register").send({ email: "defaults@example.com", password: "Correct-Horse-42" });
    expect([res.status, Object.keys(res.body)]).toEqual([201, ["token"]]);
    const sources = await sourcesOf((res.body as { token: string }).token);
    expect(sources.map((s) => s.url)).toEqual(["http://8.8.8.8/default.txt", "https://8.8.4.4/default.json"]);
    const jobs = await h.deps.queues.scrape.queue.getJobs(["wait", "prioritized"]);
    expect(jobs.map((job) => job.id)).toEqual(expect.arrayContaining(sources.map((s) => `ss-${s.id}`)));
    await h.http.post("/api/saveSettings").set(as(admin)).send({ scraper: { scrape_sites: [] } });
  });

  it("matches the literal routes before /{id} and answers the robots check for an unreachable host", async () => {
    const respect = await h.http.get("/api/scrapingSources/respectRobots").set(as(alice));
    expect([respect.status, respect.body]).toEqual([200, { respect_robots_txt: true }]);
    const unreachable = await h.http.get("/api/scrapingSources/check").query({ url: "http://lists.invalid/list.txt" }).set(as(alice));
    expect([unreachable.status, unreachable.body]).toEqual([200, { allowed: false, robots_found: false, error: expect.stringMatching(/robots\.txt unreachable/) }]);
    const refused = await h.http.get("/api/scrapingSources/check").query({ url: "http://127.0.0.1/list.txt" }).set(as(alice));
    expect(refused.body).toEqual({ allowed: false, robots_found: false, error: expect.stringMatching(/refused/) });
    expect((await h.http.get("/api/scrapingSources/check").query({ url: "ftp://x/" }).set(as(alice))).status).toBe(400);
    expect((await request(h.service.handler).get("/api/scrapingSources/check?url=http://x/")).status).toBe(401);
  });
});

/** A Redis of the test's own, stopped for real, makes the scrape queue unavailable. */
describe("scraping sources API without Redis", () => {
  let owned: OwnedRedis;
  let h: GatewayHarness;
  let running = true;
  let user = "";

  beforeAll(async () => {
    owned = await startOwnedRedis();
    h = await startGatewayHarness({ REDIS_URL: owned.url });
    const admin = (await h.register()).token;
    const saved = await h.http.post("/api/saveSettings").set({ Authorization: `Bearer ${admin}` }).send({ scraper: { scrape_sites: ["http://8.8.8.8/default.txt"] } });
    expect(saved.status).toBe(200);
    user = (await h.register()).token;
    const early = await h.http.post("/api/scrapingSources").set({ Authorization: `Bearer ${user}` }).field("scrapeSourceTextarea", "http://8.8.8.8/early.txt");
    expect([early.status, early.body]).toEqual([200, { sourceCount: 1 }]);
    await owned.stop();
    running = false;
  }, 60_000);
  afterAll(async () => {
    // Back up (empty) first, so the gateway's queue connections close instead of waiting to reconnect.
    if (!running) await owned?.start();
    await h?.close();
    await owned?.close();
  });

  const urlsOf = async (email: string) =>
    (await h.db.pool.query<{ url: string }>("SELECT s.url FROM scrape_sources s JOIN users u ON u.id = s.user_id WHERE u.email = $1 ORDER BY s.id", [email])).rows.map((row) => row.url);

  it("registers a user with a warning and without the default sources when they cannot be queued", async () => {
    const res = await h.http.post("/api/register").send({ email: "warned@example.com", password: "Correct-Horse-42" });
    expect([res.status, res.body]).toEqual([201, { token: expect.any(String), warning: expect.any(String) }]);
    expect(await urlsOf("warned@example.com")).toEqual([]);
  });

  it("rolls a save back and answers 503 when the scrape queue cannot take the announcements", async () => {
    const res = await h.http.post("/api/scrapingSources").set({ Authorization: `Bearer ${user}` }).field("scrapeSourceTextarea", "http://8.8.8.8/late.txt\nhttp://8.8.8.8/later.txt");
    expect([res.status, res.body]).toEqual([503, { error: expect.any(String) }]);
    const owner = await h.db.pool.query<{ n: string }>("SELECT count(*)::text AS n FROM scrape_sources WHERE url LIKE '%/late%'");
    expect(owner.rows[0]?.n).toBe("0");
    expect((await h.db.pool.query("SELECT 1 FROM scrape_sources WHERE url = 'http://8.8.8.8/early.txt'")).rowCount).toBe(1);
    expect((await h.db.pool.query("SELECT 1 FROM scrape_sources WHERE url = 'http://8.8.8.8/default.txt'")).rowCount).toBe(1);
  });
});

/** The robots check against a real nginx: the gateway may reach loopback here (ALLOW_PRIVATE_NETWORK_TARGETS). */
describePeers("scraping sources robots check", () => {
  let h: GatewayHarness;
  let lists: NginxListServer;
  let bare: NginxListServer;
  let token = "";

  beforeAll(async () => {
    lists = await startNginxListServer({ host: "127.0.0.13" });
    bare = await startNginxListServer({ host: "127.0.0.14" });
    await lists.put("robots.txt", "User-agent: *\nDisallow: /private/\n");
    h = await startGatewayHarness({ ALLOW_PRIVATE_NETWORK_TARGETS: "true", SCRAPER_PROJECT_URL: "https://roost.example/project" });
    token = (await h.register()).token;
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await Promise.all([lists?.stop(), bare?.stop()]);
  });

  const check = async (url: string) => (await h.http.get("/api/scrapingSources/check").query({ url }).set({ Authorization: `Bearer ${token}` })).body;

  it("reads robots.txt once per origin with the scraper's user agent and answers found, disallowed and not found", async () => {
    expect(await check(`${lists.origin}/public/list.txt`)).toEqual({ allowed: true, robots_found: true, error: null });
    expect(await check(`${lists.origin}/private/list.txt`)).toEqual({ allowed: false, robots_found: true, error: null });
    expect(await check(`${bare.origin}/private/list.txt`)).toEqual({ allowed: true, robots_found: false, error: null });
    const robots = (await lists.requests()).filter((r) => r.path === "/robots.txt");
    expect(robots).toEqual([{ path: "/robots.txt", status: 200, userAgent: "Roost/test (+https://roost.example/project)" }]);
    // Only robots.txt was asked for, never the lists themselves.
    expect((await lists.requests()).every((r) => r.path === "/robots.txt")).toBe(true);
  });
});
