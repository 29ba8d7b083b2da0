import { ProbeLimiter, runCheckBatch } from "@roost/checking";
import { OutboundGuard } from "@roost/net";
import { createLogger } from "@roost/observability";
import { closedPort, startNginxJudge, startTinyproxy, type NginxJudge, type ProxyPeer } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { userIdOfToken } from "../../test-support/proxy-fixtures.js";

/** The checker's verdicts as users read them: list filters, the detail's reputation and the dashboard breakdown. */
describe("verdicts in the API after real checks", () => {
  let h: GatewayHarness;
  let judge: NginxJudge;
  let proxy: ProxyPeer;
  beforeAll(async () => {
    h = await startGatewayHarness({ ALLOW_PRIVATE_NETWORK_TARGETS: "true" });
    judge = await startNginxJudge();
    proxy = await startTinyproxy({ mode: "elite" });
  }, 60_000);
  afterAll(async () => {
    await proxy?.stop();
    await judge?.stop();
    await h?.close();
  });

  it("a steady proxy is good and a dead one poor after three checks, in the list, the detail and the dashboard", async () => {
    const { token } = await h.register();
    const userId = await userIdOfToken(h, token);
    const auth = { Authorization: `Bearer ${token}` };
    const settings = { http_protocol: true, https_protocol: false, socks4_protocol: false, socks5_protocol: false, timeout: 2000, retries: 0, judges: [{ url: judge.httpUrl, regex: "default" }] };
    expect((await h.http.post("/api/user/settings").set(auth).send(settings)).status).toBe(200);
    const dead = await closedPort();
    const upload = await h.http.post("/api/addProxies").set(auth).send({ proxyTextarea: `127.0.0.1:${proxy.port}\n127.0.0.1:${dead}` });
    expect(upload.status).toBe(200);
    const { rows } = await h.db.pool.query<{ id: number; port: number }>("SELECT id, port FROM proxies WHERE user_id = $1 ORDER BY port", [userId]);
    const deps = {
      pool: h.db.pool,
      guard: new OutboundGuard({ allowPrivateNetworkTargets: true }),
      probes: new ProbeLimiter(16, 64),
      logger: createLogger({ silent: true }),
      settings: () => ({ intervalSeconds: 3600, standardHeaders: ["USER-AGENT", "HOST"], proxyHeaders: ["VIA", "X-FORWARDED-FOR"], saveResponses: false }),
      ownAddresses: () => ["127.0.0.1"],
      requestHeaders: { "user-agent": "Roost-verdicts-test (q9z)", accept: "*/*", "accept-encoding": "identity" },
    };
    for (let cycle = 0; cycle < 3; cycle++) await runCheckBatch(deps, userId, rows.map((r) => r.id));
    const good = await h.http.get("/api/getProxyPage/1?reputation=good").set(auth);
    expect((good.body as { proxies: { port: number }[] }).proxies.map((p) => p.port)).toEqual([proxy.port]);
    const poor = await h.http.get("/api/getProxyPage/1?reputation=poor&status=dead").set(auth);
    expect((poor.body as { proxies: { port: number }[]; total: number }).proxies.map((p) => p.port)).toEqual([dead]);
    const steadyId = rows.find((r) => r.port === proxy.port)?.id ?? 0;
    const detail = await h.http.get(`/api/proxies/${steadyId}`).set(auth);
    expect(detail.body).toMatchObject({
      alive: true,
      anonymity_level: "elite",
      reputation: { overall: { kind: "overall", label: "good", score: 100 }, http: { kind: "http", label: "good", score: 100 } },
      protocol_results: [{ protocol: "http", alive: true, check_count: 3, success_count: 3, uptime_percentage: 100 }],
    });
    const dashboard = await h.http.get("/api/getDashboardInfo").set(auth);
    expect(dashboard.body).toMatchObject({
      total_checks: 6,
      reputation_breakdown: { good: 1, neutral: 0, poor: 1, unknown: 0 },
      top_reputation_proxy: { proxy_id: steadyId, score: 100, label: "good" },
      judge_valid_proxies: [{ judge_url: judge.httpUrl, elite_proxies: 3, anonymous_proxies: 0, transparent_proxies: 0 }],
    });
  }, 60_000);
});
