import { Redis } from "ioredis";
import { createGlobalConfigStore, defaultGlobalConfig, type GlobalConfig, type GlobalConfigStore } from "@roost/global-config";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { startGatewayPeer, type GatewayPeer } from "../../test-support/gateway-peer.js";

/** The stored document, read straight from PostgreSQL (undefined before the first save). */
async function storedConfig(h: GatewayHarness): Promise<unknown> {
  const row = await h.db.prisma.globalConfig.findUnique({ where: { id: 1 } });
  return row?.config;
}

describe("global settings", () => {
  let h: GatewayHarness;
  let admin: string;
  let user: string;
  const asAdmin = () => ({ Authorization: `Bearer ${admin}` });

  beforeEach(async () => {
    h = await startGatewayHarness();
    admin = (await h.register()).token;
    user = (await h.register()).token;
  });
  afterEach(async () => {
    await h.close();
  });

  it("is for admins only", async () => {
    for (const [method, path] of [
      ["get", "/api/global/settings"],
      ["post", "/api/saveSettings"],
    ] as const) {
      const anonymous = await h.http[method](path).send({});
      expect([path, anonymous.status, anonymous.body]).toEqual([path, 401, { error: expect.any(String) }]);
      const notAdmin = await h.http[method](path).set("Authorization", `Bearer ${user}`).send({});
      expect([path, notAdmin.status, notAdmin.body]).toEqual([path, 403, { error: expect.any(String) }]);
    }
  });

  it("a save that sets or changes the GeoLite key enqueues one forced geolite-update; other saves enqueue none", async () => {
    const forced = async () =>
      (await h.deps.queues.maintenance.queue.getJobs(["waiting", "prioritized", "delayed", "active", "completed", "failed"])).filter(
        (job) => job.name === "geolite-update" && (job.data as { force?: unknown }).force === true,
      ).length;
    const save = async (body: object) => expect((await h.http.post("/api/saveSettings").set(asAdmin()).send(body)).status).toBe(200);
    expect(await forced()).toBe(0);
    await save({ geolite: { api_key: "licence-1" } });
    expect(await forced()).toBe(1);
    await save({ geolite: { interval_seconds: 7200 }, checker: { retries: 2 } });
    expect(await forced()).toBe(1);
    await save({ geolite: { api_key: "licence-2" } });
    expect(await forced()).toBe(2);
  });

  it("removes every user's judges and scrape sources that a newly blacklisted domain blocks", async () => {
    const asUser = { Authorization: `Bearer ${user}` };
    const judges = [
      { url: "http://judge.good.example/", regex: "default" },
      { url: "http://j.badsite.org/azenv", regex: "default" },
      { url: "https://badsite.org/", regex: "default" },
    ];
    expect((await h.http.post("/api/user/settings").set(asUser).send({ judges })).status).toBe(200);
    const userId = (await h.http.get("/api/checkLogin").set(asUser)).body.user_id as number;
    await h.db.prisma.scrapeSource.createMany({
      data: [
        { userId, url: "https://lists.badsite.org/http.txt" },
        { userId, url: "https://notbadsite.org/http.txt" },
      ],
    });

    const saved = await h.http.post("/api/saveSettings").set(asAdmin()).send({ website_blacklist: ["badsite.org"] });
    expect(saved.status).toBe(200);

    const settings = await h.http.get("/api/user/settings").set(asUser);
    expect(settings.body.judges).toEqual([{ url: "http://judge.good.example/", regex: "default" }]);
    expect(settings.body.scraping_sources).toEqual(["https://notbadsite.org/http.txt"]);
  });

  it("serves the documented defaults before anything was saved", async () => {
    const res = await h.http.get("/api/global/settings").set(asAdmin());
    expect(res.status).toBe(200);
    expect(res.headers["cache-control"]).toBe("no-store");
    expect(res.body).toEqual(defaultGlobalConfig);
  });

  it("merges a partial save: omitted sections and keys keep their values", async () => {
    const first = await h.http
      .post("/api/saveSettings")
      .set(asAdmin())
      .send({ checker: { timeout_ms: 7000, judges: [{ url: "http://judge.example.org/azenv", regex: "default" }] }, website_blacklist: ["Evil.COM"] });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ message: expect.any(String) });

    const second = await h.http.post("/api/saveSettings").set(asAdmin()).send({ scraper: { respect_robots_txt: false } });
    expect(second.status).toBe(200);

    const expected: GlobalConfig = {
      ...defaultGlobalConfig,
      checker: { ...defaultGlobalConfig.checker, timeout_ms: 7000, judges: [{ url: "http://judge.example.org/azenv", regex: "default" }] },
      scraper: { ...defaultGlobalConfig.scraper, respect_robots_txt: false },
      website_blacklist: ["evil.com"],
    };
    const res = await h.http.get("/api/global/settings").set(asAdmin());
    expect(res.body).toEqual(expected);
    expect(await storedConfig(h)).toEqual(expected);
    expect(h.deps.globalConfig.current()).toEqual(expected);
  });

  it("refuses unknown keys, wrong types and bad ranges with 400 and changes nothing", async () => {
    await h.http.post("/api/saveSettings").set(asAdmin()).send({ checker: { retries: 3 } }).expect(200);
    const before = await storedConfig(h);

    const cases: [unknown, RegExp][] = [
      [{ bogus: 1 }, /unknown key bogus/],
      [{ checker: { retries: 4, bogus: true } }, /unknown key checker\.bogus/],
      [{ checker: { judges: [{ url: "http://j.example.org/", regex: "default", extra: 1 }] } }, /unknown key checker\.judges\.0\.extra/],
      [{ checker: { retries: "4" } }, /checker\.retries/],
      [{ checker: { retries: 11 } }, /checker\.retries/],
      [{ checker: { timeout_ms: 10 } }, /checker\.timeout_ms/],
      [{ checker: null }, /checker/],
      [{ protocols: "yes" }, /protocols/],
      [{ protocols: { http: "true" } }, /protocols\.http/],
      [{ website_blacklist: "evil.com" }, /website_blacklist/],
      [{ website_blacklist: ["https://evil.com/path"] }, /website_blacklist\.0/],
      [{ scraper: { scrape_sites: ["ftp://lists.example.org/"] } }, /scraper\.scrape_sites\.0/],
      [{ checker: { judges: [{ url: "http://j.example.org/", regex: "(unclosed" }] } }, /checker\.judges\.0\.regex/],
      [{ checker: { judges: [{ url: "http://j.example.org/", regex: "(?<=x)y" }] } }, /checker\.judges\.0\.regex/],
      [{ rotating_proxies: { port_start: 30000, port_end: 20000 } }, /rotating_proxies/],
      // One good key does not get through next to a bad one.
      [{ checker: { retries: 5 }, scraper: { timeout_ms: "slow" } }, /scraper\.timeout_ms/],
    ];
    for (const [body, message] of cases) {
      const res = await h.http.post("/api/saveSettings").set(asAdmin()).send(body as object);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.headers["content-type"]).toMatch(/application\/json/);
      expect(Object.keys(res.body as object)).toEqual(["error"]);
      expect((res.body as { error: string }).error).toMatch(message);
    }
    for (const raw of ["[]", '"text"', "42", '{"__proto__": {"retries": 9}}']) {
      const res = await h.http.post("/api/saveSettings").set(asAdmin()).set("Content-Type", "application/json").send(raw);
      expect({ raw, status: res.status, body: res.body }).toEqual({ raw, status: 400, body: { error: expect.any(String) } });
    }
    expect(await storedConfig(h)).toEqual(before);
    expect(h.deps.globalConfig.current().checker.retries).toBe(3);
  });

  it("refuses URLs the merged website blacklist blocks, with the URLs per field", async () => {
    // Blacklisting the host of the default judge while keeping that judge is refused.
    const judgeBlocked = await h.http.post("/api/saveSettings").set(asAdmin()).send({ website_blacklist: ["azenv.net"] });
    expect(judgeBlocked.status).toBe(400);
    expect(judgeBlocked.body).toEqual({
      error: expect.any(String),
      blocked_websites: { judges: ["http://azenv.net/"], scrape_sites: [], blacklist_sources: [], ip_lookup: [] },
      website_blacklist: ["azenv.net"],
    });
    expect(await storedConfig(h)).toBeUndefined();

    // Every field at once; subdomains are blocked, look-alike hosts are not.
    const everything = await h.http
      .post("/api/saveSettings")
      .set(asAdmin())
      .send({
        website_blacklist: ["bad.org", "*.worse.net"],
        checker: {
          judges: [
            { url: "http://judge.bad.org/", regex: "default" },
            { url: "http://notbad.org/", regex: "default" },
          ],
          ip_lookup: "https://ip.worse.net/",
        },
        scraper: { scrape_sites: ["https://bad.org/list.txt", "https://fine.example.com/list.txt"] },
        blacklist_sources: ["https://a.b.worse.net/drop.txt"],
      });
    expect(everything.status).toBe(400);
    expect(Object.keys(everything.body as object).sort()).toEqual(["blocked_websites", "error", "website_blacklist"]);
    expect(everything.body).toEqual({
      error: expect.any(String),
      blocked_websites: {
        judges: ["http://judge.bad.org/"],
        scrape_sites: ["https://bad.org/list.txt"],
        blacklist_sources: ["https://a.b.worse.net/drop.txt"],
        ip_lookup: ["https://ip.worse.net/"],
      },
      website_blacklist: ["bad.org", "worse.net"],
    });

    // The stored blacklist applies to URLs added by a later save.
    await h.http.post("/api/saveSettings").set(asAdmin()).send({ website_blacklist: ["evil.com"] }).expect(200);
    const later = await h.http
      .post("/api/saveSettings")
      .set(asAdmin())
      .send({ scraper: { scrape_sites: ["https://lists.evil.com/p.txt"] } });
    expect(later.status).toBe(400);
    expect(later.body).toEqual({
      error: expect.any(String),
      blocked_websites: { judges: [], scrape_sites: ["https://lists.evil.com/p.txt"], blacklist_sources: [], ip_lookup: [] },
      website_blacklist: ["evil.com"],
    });

    // Blacklisting a host and dropping the judge on it in the same save is fine.
    const together = await h.http
      .post("/api/saveSettings")
      .set(asAdmin())
      .send({ website_blacklist: ["evil.com", "azenv.net"], checker: { judges: [{ url: "http://judge.example.org/", regex: "default" }] } });
    expect(together.status).toBe(200);
    expect(h.deps.globalConfig.current().website_blacklist).toEqual(["evil.com", "azenv.net"]);
    expect(h.deps.globalConfig.current().scraper.scrape_sites).toEqual([]);
  });

  it("loses no update when admins save different keys at the same time", async () => {
    for (let round = 1; round <= 3; round++) {
      const saves: Record<string, unknown>[] = [
        { checker: { timeout_ms: 1000 + round } },
        { checker: { retries: round } },
        { checker: { concurrency: 100 + round } },
        { scraper: { timeout_ms: 2000 + round } },
        { scraper: { max_bytes: 4096 + round } },
        { proxy_limits: { max_per_user: 500 + round } },
        { geolite: { interval_seconds: 7200 + round } },
        { blacklist_interval_seconds: 600 + round },
        { checker: { statistics_retention_days: 10 + round } },
        { checker: { response_retention_days: 20 + round } },
      ];
      const responses = await Promise.all(saves.map((body) => h.http.post("/api/saveSettings").set(asAdmin()).send(body)));
      expect(responses.map((r) => r.status)).toEqual(saves.map(() => 200));
      const stored = (await storedConfig(h)) as GlobalConfig;
      expect({
        timeout: stored.checker.timeout_ms,
        retries: stored.checker.retries,
        concurrency: stored.checker.concurrency,
        scraperTimeout: stored.scraper.timeout_ms,
        maxBytes: stored.scraper.max_bytes,
        maxPerUser: stored.proxy_limits.max_per_user,
        geolite: stored.geolite.interval_seconds,
        blacklist: stored.blacklist_interval_seconds,
        statistics: stored.checker.statistics_retention_days,
        responses: stored.checker.response_retention_days,
      }).toEqual({
        timeout: 1000 + round,
        retries: round,
        concurrency: 100 + round,
        scraperTimeout: 2000 + round,
        maxBytes: 4096 + round,
        maxPerUser: 500 + round,
        geolite: 7200 + round,
        blacklist: 600 + round,
        statistics: 10 + round,
        responses: 20 + round,
      });
      expect(h.deps.globalConfig.current()).toEqual(stored);
    }
  });

  describe("with a second instance on the same database and Redis prefix", () => {
    let peer: GatewayPeer;
    beforeEach(async () => {
      peer = await startGatewayPeer(h);
    });
    afterEach(async () => {
      await peer.close();
    });

    it("broadcasts every change: the other instance's config follows", async () => {
      const seenByPeer: GlobalConfig[] = [];
      peer.deps.globalConfig.onChange((config) => seenByPeer.push(config));
      const savedOnA: unknown[] = [];
      const savedOnB: unknown[] = [];
      h.deps.globalConfig.onSaved(({ config, previous }) => {
        savedOnA.push([previous.checker.timeout_ms, config.checker.timeout_ms]);
      });
      peer.deps.globalConfig.onSaved(() => {
        savedOnB.push(true);
      });

      await h.http.post("/api/saveSettings").set(asAdmin()).send({ checker: { timeout_ms: 4321 } }).expect(200);
      await waitFor(() => peer.deps.globalConfig.current().checker.timeout_ms === 4321, {
        timeoutMs: 5000,
        what: "the peer to see the new timeout",
      });
      expect(peer.deps.globalConfig.current()).toEqual(h.deps.globalConfig.current());

      // The peer serves it over HTTP too (same JWT secret, same revocation store).
      const viaPeer = await peer.http.get("/api/global/settings").set(asAdmin());
      expect(viaPeer.status).toBe(200);
      expect(viaPeer.body.checker.timeout_ms).toBe(4321);

      // A save on the peer reaches the first instance.
      await peer.http.post("/api/saveSettings").set(asAdmin()).send({ website_blacklist: ["spam.example"] }).expect(200);
      await waitFor(() => h.deps.globalConfig.current().website_blacklist.includes("spam.example"), {
        timeoutMs: 5000,
        what: "the first instance to see the blacklist",
      });

      // onChange ran once per change on the peer; onSaved only where the save happened.
      expect(seenByPeer.map((c) => [c.checker.timeout_ms, c.website_blacklist])).toEqual([
        [4321, []],
        [4321, ["spam.example"]],
      ]);
      expect(savedOnA).toEqual([[defaultGlobalConfig.checker.timeout_ms, 4321]]);
      expect(savedOnB).toEqual([true]);
    });
  });

  describe("an instance that missed a broadcast", () => {
    const stores: GlobalConfigStore[] = [];
    const connections: Redis[] = [];
    afterEach(async () => {
      await Promise.all(stores.splice(0).map((store) => store.stop()));
      for (const connection of connections.splice(0)) connection.disconnect();
    });

    async function storeOnHarness(resyncIntervalMs: number) {
      const redis = new Redis(h.redis.url, { maxRetriesPerRequest: 1 });
      const subscriber = new Redis(h.redis.url, { maxRetriesPerRequest: null });
      connections.push(redis, subscriber);
      const subscriberId = Number(await subscriber.client("ID"));
      const store = createGlobalConfigStore({ prisma: h.db.prisma, redis, subscriber, prefix: h.redis.prefix, resyncIntervalMs });
      stores.push(store);
      await store.start();
      return { store, subscriberId, redis };
    }

    /** A change committed without a broadcast, as when Redis was away while another instance saved. */
    async function commitWithoutBroadcast(blacklistIntervalSeconds: number) {
      const config = { ...defaultGlobalConfig, blacklist_interval_seconds: blacklistIntervalSeconds };
      await h.db.prisma.globalConfig.upsert({ where: { id: 1 }, create: { id: 1, config }, update: { config } });
    }

    it("re-reads the store when its subscriber connection comes back", async () => {
      const { store, subscriberId, redis } = await storeOnHarness(0);
      await commitWithoutBroadcast(999);
      expect(store.current().blacklist_interval_seconds).toBe(defaultGlobalConfig.blacklist_interval_seconds);
      // Drop exactly this subscriber's connection; ioredis reconnects and re-subscribes.
      await redis.client("KILL", "ID", String(subscriberId));
      await waitFor(() => store.current().blacklist_interval_seconds === 999, { timeoutMs: 10_000, what: "a re-read after reconnect" });
    });

    it("re-reads the store periodically", async () => {
      const { store } = await storeOnHarness(50);
      await commitWithoutBroadcast(1234);
      await waitFor(() => store.current().blacklist_interval_seconds === 1234, { timeoutMs: 5000, what: "a periodic re-read" });
    });
  });
});
