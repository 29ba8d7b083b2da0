import request from "supertest";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { parseProxyFilters } from "@roost/inventory";
import {
  insertProtocolStatus,
  insertProxy,
  insertReputation,
  insertStatistic,
  referencePage,
  userIdOfToken,
  type ProxyFixture,
} from "../../test-support/proxy-fixtures.js";

interface ListBody {
  proxies: { id: number; ip: string; port: number; alive: boolean; country: string; latest_check: string | null }[];
  total: number;
}

describe("proxy list, filters, detail and statistics", () => {
  let h: GatewayHarness;
  let token: string;
  let other: string;
  let userId: number;
  let otherId: number;
  const ids: Record<string, number> = {};

  const get = (path: string, as = token) => h.http.get(path).set("Authorization", `Bearer ${as}`);
  const list = async (query: string, page: number | string = 1): Promise<ListBody> => {
    const res = await get(`/api/getProxyPage/${page}${query ? `?${query}` : ""}`);
    expect(res.status).toBe(200);
    return res.body as ListBody;
  };
  const ipsOf = (body: ListBody) => body.proxies.map((p) => p.ip);

  const fixtures: Record<string, ProxyFixture> = {
    // alive on http only, fast, first try, US datacenter
    a: { ip: "8.8.8.1", country: "US", estimatedType: "datacenter", aliveOn: ["http"], responseTime: 150, attempt: 0, anonymity: "elite", reputationLabel: "good", reputationScore: 91.5 },
    // alive on socks5 and https, slower, needed a retry
    b: { ip: "8.8.8.2", port: 1080, country: "DE", estimatedType: "residential", aliveOn: ["https", "socks5"], responseTime: 900, attempt: 1, anonymity: "anonymous", reputationLabel: "neutral", reputationScore: 55 },
    // alive on socks4, transparent, needed two retries
    c: { ip: "8.8.9.3", country: "US", estimatedType: "mobile", aliveOn: ["socks4"], responseTime: 2500, attempt: 2, anonymity: "transparent", reputationLabel: "poor", reputationScore: 12 },
    // never checked
    d: { ip: "9.9.9.4", country: "FR", estimatedType: "unknown" },
    // checked, dead everywhere
    e: { ip: "9.9.9.5", port: 3128, country: "N/A", estimatedType: "datacenter", latestCheck: new Date("2026-01-02T03:04:05.678Z"), reputationLabel: "poor", reputationScore: 3 },
  };

  beforeAll(async () => {
    h = await startGatewayHarness();
    ({ token } = await h.register());
    ({ token: other } = await h.register());
    userId = await userIdOfToken(h, token);
    otherId = await userIdOfToken(h, other);
    for (const [name, fixture] of Object.entries(fixtures)) ids[name] = await insertProxy(h.db.pool, userId, fixture);
    // The other user owns the same addresses: tenants never share rows.
    await insertProxy(h.db.pool, otherId, fixtures.a ?? { ip: "8.8.8.1" });
    await insertProxy(h.db.pool, otherId, { ip: "7.7.7.7", country: "GB" });
  });
  afterAll(async () => {
    await h.close();
  });

  it("sends the bytes JSON.stringify gives for the reference page (the REST page is built as text)", async () => {
    // One statement and no intermediate objects on the REST side; GraphQL builds the objects. Same answer either way.
    for (const [query, page, pageSize] of [["", 1, 40], ["", 2, 2], ["", 9, 40], ["status=alive", 1, 2], ["country=us", 1, 40], ["reputation=poor", 1, 1], ["search=8.8", 2, 1]] as const) {
      const res = await get(`/api/getProxyPage/${page}?pageSize=${pageSize}${query ? `&${query}` : ""}`);
      expect(res.status).toBe(200);
      expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
      const filters = parseProxyFilters(Object.fromEntries(new URLSearchParams(query)));
      expect(res.text).toBe(JSON.stringify(await referencePage(h.db.pool, userId, filters, page, pageSize)));
    }
  });

  it("builds the same bytes as JSON.stringify for every protocol mask and awkward scores", async () => {
    // The REST rows are written by PostgreSQL; numbers must come out as JavaScript writes them.
    const { token: third } = await h.register();
    const thirdId = await userIdOfToken(h, third);
    const scores = [0, 100, 87.3, 33.333332, 0.00001, 0.000001, 1.5e-7, 5e-10, 99.99999, 12.5];
    const protocols = ["http", "https", "socks4", "socks5"] as const;
    for (let mask = 0; mask < 16; mask++) {
      await insertProxy(h.db.pool, thirdId, {
        ip: `44.0.0.${mask + 1}`,
        aliveOn: protocols.filter((_, bit) => (mask & (1 << bit)) !== 0),
        reputationLabel: "neutral",
        reputationScore: scores[mask % scores.length] ?? 0,
        latestCheck: mask % 2 === 0 ? null : new Date(Date.UTC(2026, 0, 2, 3, 4, 5, mask)),
      });
    }
    const res = await get("/api/getProxyPage/1?pageSize=100", third);
    expect(res.status).toBe(200);
    expect(res.text).toBe(JSON.stringify(await referencePage(h.db.pool, thirdId, parseProxyFilters({ pageSize: "100" }), 1, 100)));
    expect((res.body as ListBody).proxies).toHaveLength(16);
  });

  it("builds the same bytes as JSON.stringify for text columns holding quotes, backslashes, separators, spaces and empty strings", async () => {
    // The REST rows arrive as PostgreSQL row values (record-text.ts); what record_out quotes must come back exactly.
    const { token: fourth } = await h.register();
    const fourthId = await userIdOfToken(h, fourth);
    const awkward = ['a"b', "c\\d", "e,f", "(g)", " h ", "", "ж ü", '\\"(,)"\\', "N/A", "\t"];
    for (let i = 0; i < awkward.length; i++) await insertProxy(h.db.pool, fourthId, { ip: `45.0.0.${i + 1}` });
    await h.db.pool.query(
      `UPDATE proxies p SET country = a.v, estimated_type = a.v, anonymity_level = a.v, reputation_label = a.v
         FROM unnest($2::text[]) WITH ORDINALITY AS a(v, n) WHERE p.user_id = $1 AND p.ip = '45.0.0.' || a.n`,
      [fourthId, awkward],
    );
    const res = await get("/api/getProxyPage/1?pageSize=100", fourth);
    expect(res.status).toBe(200);
    expect(res.text).toBe(JSON.stringify(await referencePage(h.db.pool, fourthId, parseProxyFilters({ pageSize: "100" }), 1, 100)));
    expect((res.body as ListBody).proxies.map((p) => p.country)).toEqual(awkward);
  });

  it("lists rows with the contract's fields in id order", async () => {
    const body = await list("");
    expect(body.total).toBe(5);
    expect(body.proxies.map((p) => p.id)).toEqual([ids.a, ids.b, ids.c, ids.d, ids.e]);
    expect(body.proxies[0]).toEqual({
      id: ids.a,
      ip: "8.8.8.1",
      port: 8080,
      protocols: ["http"],
      estimated_type: "datacenter",
      response_time: 150,
      country: "US",
      anonymity_level: "elite",
      alive: true,
      latest_check: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      reputation: { overall: { kind: "overall", score: 91.5, label: "good" } },
    });
    // A never-checked proxy: alive false, latest_check null, response_time 0, N/A, unknown.
    expect(body.proxies[3]).toMatchObject({ alive: false, latest_check: null, response_time: 0, anonymity_level: "N/A", protocols: [], reputation: { overall: { label: "unknown", score: 0 } } });
    expect(body.proxies[4]?.latest_check).toBe("2026-01-02T03:04:05.678Z");
  });

  it("filters by status, protocol, country, type, anonymity, reputation, maxTimeout and maxRetries", async () => {
    expect(ipsOf(await list("status=alive"))).toEqual(["8.8.8.1", "8.8.8.2", "8.8.9.3"]);
    expect(ipsOf(await list("status=dead"))).toEqual(["9.9.9.4", "9.9.9.5"]);
    expect(ipsOf(await list("protocol=socks5"))).toEqual(["8.8.8.2"]);
    // Repeatable parameters OR within, comma lists too.
    expect(ipsOf(await list("protocol=http&protocol=socks4"))).toEqual(["8.8.8.1", "8.8.9.3"]);
    expect(ipsOf(await list("protocol=http,socks4"))).toEqual(["8.8.8.1", "8.8.9.3"]);
    expect(ipsOf(await list("protocol=socks5&status=dead"))).toEqual(["9.9.9.4", "9.9.9.5"]);
    expect(ipsOf(await list("country=US"))).toEqual(["8.8.8.1", "8.8.9.3"]);
    expect(ipsOf(await list("country=us&country=FR"))).toEqual(["8.8.8.1", "8.8.9.3", "9.9.9.4"]);
    expect(ipsOf(await list("country=N/A"))).toEqual(["9.9.9.5"]);
    expect(ipsOf(await list("type=datacenter"))).toEqual(["8.8.8.1", "9.9.9.5"]);
    expect(ipsOf(await list("anonymity=transparent&anonymity=anonymous"))).toEqual(["8.8.8.2", "8.8.9.3"]);
    expect(ipsOf(await list("anonymity=N/A"))).toEqual(["9.9.9.4", "9.9.9.5"]);
    expect(ipsOf(await list("reputation=poor"))).toEqual(["8.8.9.3", "9.9.9.5"]);
    expect(ipsOf(await list("reputation=unknown"))).toEqual(["9.9.9.4"]);
    // maxTimeout keeps response_time <= n; 0 means no limit (dead rows have 0 and stay).
    expect(ipsOf(await list("maxTimeout=1000"))).toEqual(["8.8.8.1", "8.8.8.2", "9.9.9.4", "9.9.9.5"]);
    expect((await list("maxTimeout=0")).total).toBe(5);
    // maxRetries keeps rows whose latest success needed attempt <= n.
    expect(ipsOf(await list("maxRetries=0"))).toEqual(["8.8.8.1"]);
    expect(ipsOf(await list("maxRetries=1"))).toEqual(["8.8.8.1", "8.8.8.2"]);
    // AND across parameters.
    expect(ipsOf(await list("status=alive&country=US&reputation=good"))).toEqual(["8.8.8.1"]);
    expect((await list("status=alive&country=US&reputation=good")).total).toBe(1);
    expect(ipsOf(await list("type=datacenter&status=dead"))).toEqual(["9.9.9.5"]);
  });

  it("keeps alive + dead = all", async () => {
    const [alive, dead, all] = await Promise.all([list("status=alive"), list("status=dead"), list("")]);
    expect(alive.total + dead.total).toBe(all.total);
  });

  it("searches IP prefixes, exact ip:port, country codes and types", async () => {
    expect(ipsOf(await list("search=8.8.8"))).toEqual(["8.8.8.1", "8.8.8.2"]);
    expect(ipsOf(await list("search=8.8."))).toEqual(["8.8.8.1", "8.8.8.2", "8.8.9.3"]);
    expect(ipsOf(await list("search=9"))).toEqual(["9.9.9.4", "9.9.9.5"]);
    expect(ipsOf(await list("search=8.8.8.2:1080"))).toEqual(["8.8.8.2"]);
    expect(ipsOf(await list("search=008.008.008.002:01080"))).toEqual(["8.8.8.2"]);
    expect(ipsOf(await list("search=8.8.8.2:8080"))).toEqual([]);
    expect(ipsOf(await list("search=de"))).toEqual(["8.8.8.2"]);
    expect(ipsOf(await list("search=mobile"))).toEqual(["8.8.9.3"]);
    expect(ipsOf(await list("search=resid"))).toEqual(["8.8.8.2"]);
    expect(ipsOf(await list(`search=${encodeURIComponent("  8.8.9 ")}`))).toEqual(["8.8.9.3"]);
    expect(ipsOf(await list("search=nothing-like-this"))).toEqual([]);
    expect((await list("search=8.8.8&status=alive")).total).toBe(2);
  });

  it("pages 1-based with a default of 40, clamps pageSize at 100 and answers past the end with the true total", async () => {
    const extra = await Promise.all(
      Array.from({ length: 120 }, (_, i) => insertProxy(h.db.pool, userId, { ip: `11.0.${i >> 8}.${i & 255}`, country: "NL" })),
    );
    try {
      const first = await list("country=NL");
      expect(first.total).toBe(120);
      expect(first.proxies).toHaveLength(40);
      expect((await list("country=NL", 3)).proxies).toHaveLength(40);
      expect((await list("country=NL&pageSize=50", 3)).proxies).toHaveLength(20);
      const clamped = await list("country=NL&pageSize=1000");
      expect(clamped.proxies).toHaveLength(100);
      const ids100 = clamped.proxies.map((p) => p.id);
      expect(ids100).toEqual([...ids100].sort((x, y) => x - y));
      expect(await list("country=NL", 4)).toEqual({ proxies: [], total: 120 });
      expect(await list("country=NL", 99999)).toEqual({ proxies: [], total: 120 });
      // Pages and sizes of any length are numbers too: past the end, and clamped.
      expect(await list("country=NL", "1000000000")).toEqual({ proxies: [], total: 120 });
      expect(await list("country=NL", "9".repeat(40))).toEqual({ proxies: [], total: 120 });
      expect(await list("", 99999)).toEqual({ proxies: [], total: 125 });
      expect((await list("country=NL&pageSize=1000000000000000")).proxies).toHaveLength(100);
      const all = await list("pageSize=100", 2);
      expect(all.total).toBe(125);
      expect(all.proxies).toHaveLength(25);
    } finally {
      await h.db.pool.query("DELETE FROM proxies WHERE id = ANY($1::int[])", [extra]);
    }
  });

  it("answers 400 for a bad page, pageSize or filter value", async () => {
    for (const path of [
      "/api/getProxyPage/0",
      "/api/getProxyPage/-1",
      "/api/getProxyPage/abc",
      "/api/getProxyPage/1.5",
      "/api/getProxyPage/1?pageSize=0",
      "/api/getProxyPage/1?pageSize=ten",
      "/api/getProxyPage/1?pageSize=-5",
      "/api/getProxyPage/1?status=sleeping",
      "/api/getProxyPage/1?status=alive&status=dead",
      "/api/getProxyPage/1?protocol=ftp",
      "/api/getProxyPage/1?type=cloud",
      "/api/getProxyPage/1?anonymity=secret",
      "/api/getProxyPage/1?reputation=excellent",
      "/api/getProxyPage/1?maxTimeout=fast",
      "/api/getProxyPage/1?maxRetries=-1",
      "/api/getProxyPage/1?country=XYZ",
      "/api/getProxyPage/1?country=United%20States",
      `/api/getProxyPage/1?search=${"1".repeat(201)}`,
    ]) {
      const res = await get(path);
      expect([path, res.status]).toEqual([path, 400]);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
  });

  it("answers 400 {error} for pages and page sizes that are not one positive integer, through the fast path and the pipeline alike", async () => {
    // h.http goes through the gateway's handler (fast path first); request(h.service.app) is Express alone.
    const pipeline = request(h.service.app);
    for (const path of [
      "/api/getProxyPage/0",
      "/api/getProxyPage/00",
      "/api/getProxyPage/+1",
      "/api/getProxyPage/1e2",
      "/api/getProxyPage/-1",
      "/api/getProxyPage/1.5",
      "/api/getProxyPage/1?pageSize=10&pageSize=20",
      "/api/getProxyPage/1?pageSize=",
      "/api/getProxyPage/1?pageSize=2.0",
    ]) {
      const viaHandler = await get(path);
      const viaExpress = await pipeline.get(path).set("Authorization", `Bearer ${token}`);
      expect([path, viaHandler.status, viaExpress.status]).toEqual([path, 400, 400]);
      expect([path, viaHandler.body]).toEqual([path, { error: expect.any(String) }]);
      expect([path, viaHandler.text]).toEqual([path, viaExpress.text]);
    }
  });

  it("ignores empty filter values: the same answer as without them, through the fast path and the pipeline alike", async () => {
    const pipeline = request(h.service.app);
    const cases: [string, string][] = [
      ["status=", ""],
      ["country=", ""],
      ["maxTimeout=", ""],
      ["reputation=", ""],
      ["status=&country=&maxTimeout=&reputation=", ""],
      ["status=alive&country=", "status=alive"],
      ["country=US&status=&reputation=&maxTimeout=", "country=US"],
    ];
    const all = await list("");
    expect(all.total).toBe(5);
    expect(ipsOf(await list("status=alive"))).toEqual(["8.8.8.1", "8.8.8.2", "8.8.9.3"]);
    for (const [withEmpty, without] of cases) {
      const expected = await get(`/api/getProxyPage/1${without ? `?${without}` : ""}`);
      expect(expected.status).toBe(200);
      const viaHandler = await get(`/api/getProxyPage/1?${withEmpty}`);
      const viaExpress = await pipeline.get(`/api/getProxyPage/1?${withEmpty}`).set("Authorization", `Bearer ${token}`);
      expect([withEmpty, viaHandler.status, viaExpress.status]).toEqual([withEmpty, 200, 200]);
      expect([withEmpty, viaHandler.text]).toEqual([withEmpty, expected.text]);
      expect([withEmpty, viaExpress.text]).toEqual([withEmpty, expected.text]);
    }
  });

  it("counts the user's proxies as a bare integer and lists the filter values present", async () => {
    const count = await get("/api/getProxyCount");
    expect(count.status).toBe(200);
    expect(count.text).toBe("5");
    expect((await get("/api/getProxyCount", other)).body).toBe(2);
    const filters = await get("/api/proxyFilters");
    expect(filters.body).toEqual({
      countries: ["DE", "FR", "N/A", "US"],
      types: ["datacenter", "residential", "mobile", "unknown"],
      anonymityLevels: ["elite", "anonymous", "transparent", "N/A"],
    });
    expect((await get("/api/proxyFilters", other)).body).toEqual({ countries: ["GB", "US"], types: ["datacenter", "unknown"], anonymityLevels: ["elite", "N/A"] });
  });

  it("never shows another tenant's rows", async () => {
    const mine = await list("pageSize=100");
    const theirs = (await get("/api/getProxyPage/1", other)).body as ListBody;
    expect(theirs.total).toBe(2);
    expect(theirs.proxies.map((p) => p.ip)).toEqual(["8.8.8.1", "7.7.7.7"]);
    const mineIds = new Set(mine.proxies.map((p) => p.id));
    expect(theirs.proxies.some((p) => mineIds.has(p.id))).toBe(false);
  });

  describe("detail and statistics", () => {
    const base = new Date("2026-03-01T00:00:00.000Z").getTime();
    let newest: string;

    beforeAll(async () => {
      const id = ids.b ?? 0;
      await h.db.pool.query("UPDATE proxies SET username = 'alice', password = 'pa:ss', scheme_hint = 'socks5', asn = 3320 WHERE id = $1", [id]);
      await insertProtocolStatus(h.db.pool, id, { protocol: "socks5", alive: true, attempt: 1, responseTime: 900, anonymity: "anonymous", judgeUrl: "http://judge-a.example/" });
      await insertProtocolStatus(h.db.pool, id, { protocol: "https", alive: true, attempt: 0, responseTime: 1200, anonymity: "anonymous" });
      await insertProtocolStatus(h.db.pool, id, { protocol: "http", alive: false, attempt: 2, responseTime: 0, anonymity: "N/A" });
      await insertReputation(h.db.pool, id, "overall", 55, "neutral");
      await insertReputation(h.db.pool, id, "socks5", 70, "good");
      await insertReputation(h.db.pool, id, "http", 5, "poor");
      for (let i = 0; i < 120; i++) {
        newest = await insertStatistic(h.db.pool, userId, id, {
          protocol: i % 2 === 0 ? "socks5" : "https",
          alive: i % 3 !== 0,
          attempt: i % 3,
          responseTime: 100 + i,
          createdAt: new Date(base + i * 60_000),
          regex: i === 119 ? "^REMOTE_ADDR" : "default",
          body: i === 119 ? "REMOTE_ADDR = 1.2.3.4\nHTTP_VIA = squid" : undefined,
        });
      }
    });

    it("gives the row, credentials, per-protocol results, the latest statistic and the reputation breakdown", async () => {
      const res = await get(`/api/proxies/${ids.b}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        id: ids.b,
        ip: "8.8.8.2",
        port: 1080,
        username: "alice",
        password: "pa:ss",
        has_auth: true,
        scheme_hint: "socks5",
        asn: 3320,
        protocols: ["https", "socks5"],
        alive: true,
        response_time: 900,
        attempt: 1,
        anonymity_level: "anonymous",
        country: "DE",
        estimated_type: "residential",
        protocol_results: [
          { protocol: "http", alive: false, attempt: 2, response_time: 0, anonymity_level: "N/A", judge: "http://judge.example/", checked_at: expect.any(String), check_count: 3, success_count: 0, uptime_percentage: 0 },
          { protocol: "https", alive: true, attempt: 0, response_time: 1200, anonymity_level: "anonymous", judge: "http://judge.example/", checked_at: expect.any(String), check_count: 3, success_count: 3, uptime_percentage: 100 },
          { protocol: "socks5", alive: true, attempt: 1, response_time: 900, anonymity_level: "anonymous", judge: "http://judge-a.example/", checked_at: expect.any(String), check_count: 3, success_count: 3, uptime_percentage: 100 },
        ],
        latest_statistic: { id: Number(newest), protocol: "https", alive: true, attempt: 2, response_time: 219, anonymity_level: "elite", judge: "http://judge.example/", created_at: new Date(base + 119 * 60_000).toISOString() },
        reputation: {
          overall: { kind: "overall", score: 55, label: "neutral" },
          http: { kind: "http", score: 5, label: "poor" },
          socks5: { kind: "socks5", score: 70, label: "good" },
        },
      });
      expect(res.headers["cache-control"]).toBe("no-store");
    });

    it("gives a never-checked proxy with empty results", async () => {
      const res = await get(`/api/proxies/${ids.d}`);
      expect(res.body).toMatchObject({ has_auth: false, username: "", password: "", protocol_results: [], latest_statistic: null, reputation: { overall: { kind: "overall", score: 0, label: "unknown" } } });
    });

    it("lists statistics newest first: default 100, clamped to 500, limit validated", async () => {
      const res = await get(`/api/proxies/${ids.b}/statistics`);
      expect(res.status).toBe(200);
      const statistics = (res.body as { statistics: { id: number; created_at: string; judge: string }[] }).statistics;
      expect(statistics).toHaveLength(100);
      expect(statistics[0]).toEqual({ id: Number(newest), alive: true, attempt: 2, response_time: 219, protocol: "https", anonymity_level: "elite", judge: "http://judge.example/", created_at: new Date(base + 119 * 60_000).toISOString() });
      const times = statistics.map((s) => s.created_at);
      expect(times).toEqual([...times].sort().reverse());
      expect(((await get(`/api/proxies/${ids.b}/statistics?limit=5`)).body as { statistics: unknown[] }).statistics).toHaveLength(5);
      expect(((await get(`/api/proxies/${ids.b}/statistics?limit=100000`)).body as { statistics: unknown[] }).statistics).toHaveLength(120);
      for (const bad of ["0", "-1", "abc", "1.5", ""]) {
        expect((await get(`/api/proxies/${ids.b}/statistics?limit=${bad}`)).status).toBe(400);
      }
      expect(((await get(`/api/proxies/${ids.d}/statistics`)).body as { statistics: unknown[] }).statistics).toEqual([]);
    });

    it("clamps the statistics limit at 500", async () => {
      const id = ids.e ?? 0;
      await h.db.pool.query(
        `INSERT INTO proxy_statistics (proxy_id, user_id, protocol, alive, attempt, response_time, anonymity_level, judge_url, created_at)
         SELECT $1, $2, 'http', false, 1, 0, 'N/A', 'http://judge.example/', now() - make_interval(secs => i) FROM generate_series(1, 600) i`,
        [id, userId],
      );
      expect(((await get(`/api/proxies/${id}/statistics?limit=501`)).body as { statistics: unknown[] }).statistics).toHaveLength(500);
    });

    it("gives one statistic with its judge response and regex", async () => {
      const res = await get(`/api/proxies/${ids.b}/statistics/${newest}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        id: Number(newest),
        alive: true,
        attempt: 2,
        response_time: 219,
        protocol: "https",
        anonymity_level: "elite",
        judge: "http://judge.example/",
        created_at: new Date(base + 119 * 60_000).toISOString(),
        response_body: "REMOTE_ADDR = 1.2.3.4\nHTTP_VIA = squid",
        regex: "^REMOTE_ADDR",
      });
      const older = (await get(`/api/proxies/${ids.b}/statistics?limit=2`)).body as { statistics: { id: number }[] };
      const withoutBody = await get(`/api/proxies/${ids.b}/statistics/${older.statistics[1]?.id}`);
      expect(withoutBody.body).toMatchObject({ response_body: "", regex: "default" });
    });

    it("answers 404 for another user's proxy or statistic and for unknown ids, 400 for malformed ids", async () => {
      expect((await get(`/api/proxies/${ids.b}`, other)).status).toBe(404);
      expect((await get(`/api/proxies/${ids.b}/statistics`, other)).status).toBe(404);
      expect((await get(`/api/proxies/${ids.b}/statistics/${newest}`, other)).status).toBe(404);
      // A statistic of one proxy is not reachable through another proxy of the same user.
      expect((await get(`/api/proxies/${ids.a}/statistics/${newest}`)).status).toBe(404);
      expect((await get(`/api/proxies/2147483647`)).status).toBe(404);
      expect((await get(`/api/proxies/${ids.b}/statistics/999999999999`)).status).toBe(404);
      const notFound = await get(`/api/proxies/${ids.b}`, other);
      expect(notFound.body).toEqual({ error: "Proxy not found" });
      for (const path of ["/api/proxies/abc", "/api/proxies/0", "/api/proxies/99999999999", `/api/proxies/${ids.b}/statistics/x`, `/api/proxies/${ids.b}/statistics/0`]) {
        expect([path, (await get(path)).status]).toEqual([path, 400]);
      }
    });

    it("answers 400 {error} for a repeated statistics limit and for ids past the columns' ranges", async () => {
      for (const path of [
        `/api/proxies/${ids.b}/statistics?limit=5&limit=6`,
        `/api/proxies/${ids.b}/statistics?limit=5&limit=5`,
        // statistic ids are int8: one past its maximum is malformed, not unknown.
        `/api/proxies/${ids.b}/statistics/9223372036854775808`,
        `/api/proxies/${ids.b}/statistics/99999999999999999999`,
        // proxy ids are int4: one past 2^31 - 1 is malformed, on every route that takes one.
        "/api/proxies/2147483648",
        "/api/proxies/2147483648/statistics",
        `/api/proxies/2147483648/statistics/${newest}`,
      ]) {
        const res = await get(path);
        expect([path, res.status]).toEqual([path, 400]);
        expect([path, res.body]).toEqual([path, { error: expect.any(String) }]);
      }
      // The largest ids of each range are well-formed: unknown, so 404.
      for (const path of [`/api/proxies/${ids.b}/statistics/9223372036854775807`, "/api/proxies/2147483647/statistics", "/api/proxies/2147483647/statistics/1"]) {
        const res = await get(path);
        expect([path, res.status]).toEqual([path, 404]);
        expect([path, res.body]).toEqual([path, { error: expect.any(String) }]);
      }
    });

    it("answers 404 for another user's statistic asked for through that user's own proxy", async () => {
      const { rows } = await h.db.pool.query<{ id: number }>("SELECT id FROM proxies WHERE user_id = $1 ORDER BY id LIMIT 1", [otherId]);
      const theirProxy = rows[0]?.id ?? 0;
      expect((await get(`/api/proxies/${theirProxy}`, other)).status).toBe(200);
      const res = await get(`/api/proxies/${theirProxy}/statistics/${newest}`, other);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: "Statistic not found" });
      // The statistic itself exists and is the owner's, through the owner's proxy.
      expect((await get(`/api/proxies/${ids.b}/statistics/${newest}`)).status).toBe(200);
    });
  });

  it("needs a token everywhere", async () => {
    for (const path of ["/api/getProxyCount", "/api/getProxyPage/1", "/api/proxyFilters", `/api/proxies/${ids.a}`, `/api/proxies/${ids.a}/statistics`]) {
      expect((await h.http.get(path)).status).toBe(401);
    }
  });
});
