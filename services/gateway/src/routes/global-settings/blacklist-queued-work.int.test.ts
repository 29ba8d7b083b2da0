import { ProbeLimiter, runCheckBatch } from "@roost/checking";
import { OutboundGuard } from "@roost/net";
import { createLogger } from "@roost/observability";
import { checkQueue, createConsumer, createRedisConnection, SCRAPE_JOB_PRIORITY, type Consumer } from "@roost/queue";
import { ensureFetches } from "@roost/scraping";
import { peerBinariesAvailable, startNginxJudge, startTinyproxy, waitFor, type NginxJudge, type ProxyPeer } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { userIdOfToken } from "../../test-support/proxy-fixtures.js";

const describePeers = peerBinariesAvailable("nginx", "tinyproxy") ? describe : describe.skip;

/** A newly blocked host drops the queued work of the judges and sources it removes (save settings, website blacklist). */
describe("website blacklist: queued scrape work", () => {
  let h: GatewayHarness;
  let admin: string;
  beforeEach(async () => {
    h = await startGatewayHarness();
    admin = (await h.register()).token;
  });
  afterEach(async () => {
    await h.close();
  });

  it("removes the waiting scrape jobs and the fetch state of blocked URLs, and keeps the others", async () => {
    const users = [(await h.register()).token, (await h.register()).token];
    const userIds = await Promise.all(users.map((token) => userIdOfToken(h, token)));
    const bad = "https://lists.badsite.org/http.txt";
    const good = "https://notbadsite.org/http.txt";
    const sources = new Map<string, number>();
    for (const userId of userIds) {
      for (const url of [bad, good]) {
        const source = await h.db.prisma.scrapeSource.create({ data: { userId, url } });
        sources.set(`${userId} ${url}`, source.id);
      }
    }
    const fetches = await ensureFetches(h.db.pool, [bad, good]);
    const scrape = h.deps.queues.scrape;
    const queued = async (): Promise<string[]> =>
      (await scrape.queue.getJobs(["wait", "prioritized", "delayed", "paused"])).map((job) => job?.id ?? "").sort();
    // What the scheduler and the API leave in the queue: a claimed URL each, a new source each, and a retry waiting out its back-off.
    await scrape.enqueue("scrape-url", { fetchId: fetches.get(bad) ?? 0 }, { jobId: "su-bad", priority: SCRAPE_JOB_PRIORITY });
    await scrape.enqueue("scrape-url", { fetchId: fetches.get(good) ?? 0 }, { jobId: "su-good", priority: SCRAPE_JOB_PRIORITY });
    await scrape.enqueue("scrape-url", { fetchId: fetches.get(bad) ?? 0 }, { jobId: "su-bad-retry", delay: 60_000 });
    for (const userId of userIds) {
      for (const [name, url] of [["bad", bad], ["good", good]] as const) {
        await scrape.enqueue("scrape-source", { userId, sourceId: sources.get(`${userId} ${url}`) ?? 0 }, { jobId: `ss-${name}-${userId}`, priority: SCRAPE_JOB_PRIORITY });
      }
    }
    await scrape.enqueue("scrape-tick", {}, { jobId: "scrape-wake" });
    expect(await queued()).toHaveLength(8);

    const saved = await h.http.post("/api/saveSettings").set({ Authorization: `Bearer ${admin}` }).send({ website_blacklist: ["badsite.org"] });
    expect(saved.status).toBe(200);

    expect(await queued()).toEqual(["scrape-wake", "ss-good-" + userIds[0], "ss-good-" + userIds[1], "su-good"].sort());
    const { rows } = await h.db.pool.query<{ url: string }>("SELECT url FROM scrape_fetches ORDER BY url");
    expect(rows).toEqual([{ url: good }]);
    const left = await h.db.pool.query<{ url: string }>("SELECT DISTINCT url FROM scrape_sources");
    expect(left.rows).toEqual([{ url: good }]);
  });
});

/**
 * Check work: a `check-batch` job carries proxy ids only; the batch reads the
 * owner's judges when it runs, so a batch queued before the save never uses a
 * judge the blacklist removed.
 */
describePeers("website blacklist: queued check work", () => {
  let h: GatewayHarness;
  let blocked: NginxJudge;
  let kept: NginxJudge;
  let proxy: ProxyPeer;
  let consumer: Consumer | null = null;
  let workerConnection: ReturnType<typeof createRedisConnection> | null = null;
  beforeAll(async () => {
    h = await startGatewayHarness({ ALLOW_PRIVATE_NETWORK_TARGETS: "true" });
    blocked = await startNginxJudge({ host: "127.0.0.21" });
    kept = await startNginxJudge({ host: "127.0.0.22" });
    proxy = await startTinyproxy({ mode: "elite" });
  }, 60_000);
  afterAll(async () => {
    await consumer?.close();
    workerConnection?.disconnect();
    await proxy?.stop();
    await Promise.all([blocked?.stop(), kept?.stop()]);
    await h?.close();
  });

  it("a batch queued before the judge's host was blocked runs with the owner's other judge", async () => {
    const admin = (await h.register()).token;
    const { token } = await h.register();
    const userId = await userIdOfToken(h, token);
    const auth = { Authorization: `Bearer ${token}` };
    // The blocked judge comes first, so the batch's one proxy would be sent to it.
    const judges = [
      { url: blocked.httpUrl, regex: "default" },
      { url: kept.httpUrl, regex: "default" },
    ];
    const settings = { http_protocol: true, https_protocol: false, socks4_protocol: false, socks5_protocol: false, timeout: 3000, retries: 0, judges };
    expect((await h.http.post("/api/user/settings").set(auth).send(settings)).status).toBe(200);
    expect((await h.http.post("/api/addProxies").set(auth).send({ proxyTextarea: `127.0.0.1:${proxy.port}` })).status).toBe(200);
    const { rows } = await h.db.pool.query<{ id: number }>("SELECT id FROM proxies WHERE user_id = $1", [userId]);
    await h.deps.queues.check.enqueue("check-batch", { userId, proxyIds: rows.map((row) => row.id) }, { jobId: "queued-before-the-save" });

    const saved = await h.http.post("/api/saveSettings").set({ Authorization: `Bearer ${admin}` }).send({ website_blacklist: [blocked.host] });
    expect(saved.status).toBe(200);

    const batches: number[] = [];
    const deps = {
      pool: h.db.pool,
      guard: new OutboundGuard({ allowPrivateNetworkTargets: true }),
      probes: new ProbeLimiter(4, 16),
      logger: createLogger({ silent: true }),
      settings: () => ({ intervalSeconds: 3600, standardHeaders: ["USER-AGENT", "HOST"], proxyHeaders: ["VIA", "X-FORWARDED-FOR"], saveResponses: false }),
      ownAddresses: () => ["127.0.0.1"],
      requestHeaders: { "user-agent": "Roost-blacklist-test", accept: "*/*", "accept-encoding": "identity" },
    };
    workerConnection = createRedisConnection(h.redis.url, "worker");
    consumer = createConsumer(
      checkQueue,
      {
        "check-tick": async () => undefined,
        "check-batch": async ({ userId: owner, proxyIds }) => {
          await runCheckBatch(deps, owner, proxyIds);
          batches.push(owner);
        },
      },
      { connection: workerConnection, prefix: h.deps.config.QUEUE_PREFIX },
    );
    await waitFor(() => batches.length === 1, { timeoutMs: 30_000, what: "the queued batch to run" });
    const checks = await h.db.pool.query<{ judge_url: string; alive: boolean }>("SELECT judge_url, alive FROM proxy_statistics WHERE user_id = $1", [userId]);
    expect(checks.rows).toEqual([{ judge_url: kept.httpUrl, alive: true }]);
  }, 60_000);
});
