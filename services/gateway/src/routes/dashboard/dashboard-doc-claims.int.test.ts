import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";

/**
 * docs/dashboard.md: `top_reputation_proxy` is the highest overall score
 * among the caller's proxies whose label is not `unknown` — an unknown row
 * never wins, whatever its score; with no rated row the key is absent
 * (GraphQL: null).
 */

interface GraphqlBody {
  data?: { dashboard?: { top_reputation_proxy: unknown; reputation_breakdown: unknown } } | null;
  errors?: unknown[];
}

describe("docs/dashboard.md claims: top_reputation_proxy", () => {
  let h: GatewayHarness;

  const userOf = async (token: string): Promise<number> => {
    const res = await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${token}`);
    return (res.body as { user_id: number }).user_id;
  };
  const dashboard = async (token: string): Promise<Record<string, unknown>> => {
    const res = await h.http.get("/api/getDashboardInfo").set("Authorization", `Bearer ${token}`);
    expect(res.status).toBe(200);
    return res.body as Record<string, unknown>;
  };
  const graphqlDashboard = async (token: string) => {
    const res = await h.http
      .post("/api/graphql")
      .set("Authorization", `Bearer ${token}`)
      .set("Content-Type", "application/json")
      .send(JSON.stringify({ query: "{ dashboard { reputation_breakdown { good neutral poor unknown } top_reputation_proxy { proxy_id ip port score label } } }" }));
    expect(res.status).toBe(200);
    expect((res.body as GraphqlBody).errors).toBeUndefined();
    return (res.body as GraphqlBody).data?.dashboard;
  };
  /** Inserts a never-rated proxy, then sets its reputation columns directly, as the checker would. */
  const insertRated = async (userId: number, ip: string, label: string, score: number): Promise<number> => {
    const { rows } = await h.db.pool.query<{ id: number }>(`INSERT INTO proxies (user_id, ip, port, country) VALUES ($1, $2, 8080, 'US') RETURNING id`, [userId, ip]);
    const id = rows[0]!.id;
    await h.db.pool.query(`UPDATE proxies SET reputation_label = $2, reputation_score = $3 WHERE id = $1`, [id, label, score]);
    return id;
  };

  beforeAll(async () => {
    h = await startGatewayHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it("skips proxies labelled unknown even when their score is higher than every rated proxy", async () => {
    const { token } = await h.register();
    const userId = await userOf(token);
    // Unknown rows first (lowest ids) and with the highest scores: a pick by score alone would take one of them.
    await insertRated(userId, "1.1.1.1", "unknown", 100);
    await insertRated(userId, "1.1.1.2", "unknown", 99.5);
    await insertRated(userId, "1.1.1.3", "neutral", 55);
    const best = await insertRated(userId, "1.1.1.4", "good", 87.5);
    await insertRated(userId, "1.1.1.5", "poor", 12);
    await insertRated(userId, "1.1.1.6", "unknown", 98);

    const info = await dashboard(token);
    expect(info.reputation_breakdown).toEqual({ good: 1, neutral: 1, poor: 1, unknown: 3 });
    expect(info.top_reputation_proxy).toEqual({ proxy_id: best, ip: "1.1.1.4", port: 8080, score: 87.5, label: "good" });
    expect((await graphqlDashboard(token))?.top_reputation_proxy).toEqual({ proxy_id: best, ip: "1.1.1.4", port: 8080, score: 87.5, label: "good" });

    // Whatever the rated row's label: a poor proxy rated above the good one wins, the unknown ones still do not.
    const poorTop = await insertRated(userId, "1.1.1.7", "poor", 90);
    expect((await dashboard(token)).top_reputation_proxy).toEqual({ proxy_id: poorTop, ip: "1.1.1.7", port: 8080, score: 90, label: "poor" });

    // A rated proxy relabelled unknown (score kept) drops out at once.
    await h.db.pool.query(`UPDATE proxies SET reputation_label = 'unknown' WHERE id = $1`, [poorTop]);
    expect((await dashboard(token)).top_reputation_proxy).toEqual({ proxy_id: best, ip: "1.1.1.4", port: 8080, score: 87.5, label: "good" });
  });

  it("leaves the key out (GraphQL: null) when every proxy is unknown, however high its score", async () => {
    const { token } = await h.register();
    const userId = await userOf(token);
    await insertRated(userId, "2.2.2.1", "unknown", 100);
    await insertRated(userId, "2.2.2.2", "unknown", 75.25);

    const info = await dashboard(token);
    expect(info.reputation_breakdown).toEqual({ good: 0, neutral: 0, poor: 0, unknown: 2 });
    expect("top_reputation_proxy" in info).toBe(false);
    expect(await graphqlDashboard(token)).toEqual({ reputation_breakdown: { good: 0, neutral: 0, poor: 0, unknown: 2 }, top_reputation_proxy: null });
  });
});
