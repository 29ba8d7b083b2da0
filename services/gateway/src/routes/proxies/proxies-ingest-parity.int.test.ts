import { ingest, type UploadOutcome } from "@roost/inventory";
import { createLogger } from "@roost/observability";
import { CHECK_WAKE_JOB_ID, checkQueue, createProducer, createRedisConnection, type Producer } from "@roost/queue";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { userIdOfToken } from "../../test-support/proxy-fixtures.js";

/**
 * `ingest` from @roost/inventory, run the way a scraper would (its own pool
 * and queue producer, a source id, no gateway code), against the same lines
 * uploaded over HTTP by another user: same counters, same rows, every proxy
 * linked to the source, the same check hand-off (due now, scheduler woken).
 */
describe("ingest outside the gateway equals an upload over HTTP", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  const lines = [
    "8.8.8.8:80",
    "8.8.8.8:80",
    "user:pa:ss@9.9.9.9:3128",
    "socks5://1.1.1.1:1080",
    "http://u:p@1.0.0.1:8080 # a comment",
    "10.0.0.1:80",
    "not a proxy",
    "999.1.1.1:80",
    "2001:db8::1 80",
    "8.8.4.4:70000",
    "",
    "# only a comment",
    "4.4.4.4\t8888",
  ];

  const rowsOf = async (userId: number) =>
    (
      await h.db.pool.query(
        `SELECT ip, port, username, password, scheme_hint, country, asn, estimated_type, alive, next_check_at <= now() AS due
           FROM proxies WHERE user_id = $1 ORDER BY id`,
        [userId],
      )
    ).rows;

  /** The check hand-off: a waiting wake-up of the scheduler (the rows are due at once, `due` above). */
  const wakeUp = async (queue: Producer<typeof checkQueue>["queue"]) => (await queue.getJob(CHECK_WAKE_JOB_ID))?.name;

  it("gives the same counters, rows, source links and check hand-off", async () => {
    const { token } = await h.register();
    const uploader = await userIdOfToken(h, token);
    await h.deps.queues.check.queue.remove(CHECK_WAKE_JOB_ID);
    const res = await h.http.post("/api/addProxies").set("Authorization", `Bearer ${token}`).field("proxyTextarea", lines.join("\n"));
    expect(res.status).toBe(200);
    const viaHttp = res.body as { proxyCount: number; details: Record<string, number> };
    expect(await wakeUp(h.deps.queues.check.queue)).toBe("check-tick");
    await h.deps.queues.check.queue.remove(CHECK_WAKE_JOB_ID);

    const scraper = await userIdOfToken(h, (await h.register()).token);
    const { rows: sources } = await h.db.pool.query<{ id: number }>(
      "INSERT INTO scrape_sources (user_id, url) VALUES ($1, 'https://lists.example.com/a.txt') RETURNING id",
      [scraper],
    );
    const sourceId = sources[0]?.id ?? 0;
    // The scraper's own producer on the gateway's queue prefix: the same queue, no gateway code.
    const connection = createRedisConnection(h.redis.url, "producer");
    const checks = createProducer(checkQueue, { connection, prefix: h.redis.prefix.slice(0, -1) });
    let outcome: UploadOutcome;
    try {
      const deps = { pool: h.db.pool, geo: await h.deps.geo.get(), checks, logger: createLogger({ silent: true }), allowPrivateTargets: false };
      outcome = await ingest(deps, scraper, lines.join("\n"), { sourceId, maxProxies: null });
      expect(outcome.proxyCount).toBe(viaHttp.proxyCount);
      const { processingMs: _ms, ...counters } = outcome.details;
      const { processingMs: _httpMs, ...httpCounters } = viaHttp.details;
      expect(counters).toEqual(httpCounters);
      expect(counters).toMatchObject({ submittedCount: 11, parsedCount: 7, blacklistedCount: 1, invalidFormatCount: 1, invalidIpCount: 1, invalidIpv4Count: 1, invalidPortCount: 1 });

      const stored = await rowsOf(scraper);
      expect(stored).toEqual(await rowsOf(uploader));
      expect(stored).toHaveLength(5);

      const { rows: links } = await h.db.pool.query<{ id: number; linked: boolean }>(
        `SELECT p.id, EXISTS (SELECT 1 FROM proxy_sources s WHERE s.proxy_id = p.id AND s.source_id = $2) AS linked
           FROM proxies p WHERE p.user_id = $1 ORDER BY p.id`,
        [scraper, sourceId],
      );
      expect(links.every((l) => l.linked)).toBe(true);
      expect(outcome.newProxyIds).toEqual(links.map((l) => l.id));

      expect(stored.every((row) => row.due === true)).toBe(true);
      expect(await wakeUp(checks.queue)).toBe("check-tick");
    } finally {
      await checks.close();
      connection.disconnect();
    }
  });
});
