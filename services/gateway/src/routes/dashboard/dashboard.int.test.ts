import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { FOLD_SLACK_ROWS, weekStartDay } from "./dashboard.service.js";

const DAY_MS = 24 * 3600 * 1000;
const utcDay = (daysAgo: number): string => new Date(Date.now() - daysAgo * DAY_MS).toISOString().slice(0, 10);

interface Seeded {
  token: string;
  userId: number;
}

describe("GET /api/getDashboardInfo", () => {
  let h: GatewayHarness;
  let alice: Seeded;
  let bob: Seeded;

  const userOf = async (token: string): Promise<number> => {
    const res = await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${token}`);
    return (res.body as { user_id: number }).user_id;
  };
  const dashboard = async (token: string) => {
    const res = await h.http.get("/api/getDashboardInfo").set("Authorization", `Bearer ${token}`);
    expect(res.status).toBe(200);
    return res.body as Record<string, unknown>;
  };
  const insertProxy = async (userId: number, ip: string, fields: { country?: string; label?: string; score?: number } = {}) => {
    const { rows } = await h.db.pool.query<{ id: number }>(
      `INSERT INTO proxies (user_id, ip, port, country, reputation_label, reputation_score)
       VALUES ($1, $2, 8080, $3, $4, $5) RETURNING id`,
      [userId, ip, fields.country ?? "N/A", fields.label ?? "unknown", fields.score ?? 0],
    );
    return rows[0]!.id;
  };
  /** What a full scan says; the trigger-maintained counts must always agree with it. */
  const groundTruth = async (userId: number) => {
    const countries = await h.db.pool.query<{ country: string; count: number }>(
      `SELECT country, count(*)::int AS count FROM proxies WHERE user_id = $1 GROUP BY country ORDER BY count DESC, country`,
      [userId],
    );
    const labels = await h.db.pool.query<{ label: string; count: number }>(
      `SELECT reputation_label AS label, count(*)::int AS count FROM proxies WHERE user_id = $1 GROUP BY reputation_label`,
      [userId],
    );
    const reputation: Record<string, number> = { good: 0, neutral: 0, poor: 0, unknown: 0 };
    for (const row of labels.rows) reputation[row.label] = row.count;
    return { country_breakdown: countries.rows, reputation_breakdown: reputation };
  };

  beforeEach(async () => {
    h = await startGatewayHarness();
    const a = await h.register();
    const b = await h.register();
    alice = { token: a.token, userId: await userOf(a.token) };
    bob = { token: b.token, userId: await userOf(b.token) };
  });
  afterEach(async () => {
    await h.close();
  });

  it("answers 401 {error} without a valid token", async () => {
    const none = await h.http.get("/api/getDashboardInfo");
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ error: expect.any(String) });
    const bad = await h.http.get("/api/getDashboardInfo").set("Authorization", "Bearer nope");
    expect(bad.status).toBe(401);
  });

  it("gives zeros and empty arrays (never null) and no top proxy to a new user", async () => {
    const info = await dashboard(alice.token);
    expect(info).toEqual({
      total_checks: 0,
      total_scraped: 0,
      total_checks_week: 0,
      total_scraped_week: 0,
      reputation_breakdown: { good: 0, neutral: 0, poor: 0, unknown: 0 },
      country_breakdown: [],
      judge_valid_proxies: [],
    });
    expect("top_reputation_proxy" in info).toBe(false);
  });

  it("sums the roll-ups (week = today and the 6 UTC days before) and counts only the caller's rows", async () => {
    const stats: [number, string, number, number][] = [
      [alice.userId, utcDay(0), 100, 7],
      [alice.userId, utcDay(6), 20, 3],
      [alice.userId, utcDay(7), 4000, 500],
      [alice.userId, utcDay(40), 50000, 60000],
      [bob.userId, utcDay(0), 999, 999],
    ];
    for (const [userId, day, checks, scraped] of stats) {
      await h.db.pool.query(`INSERT INTO user_daily_stats (user_id, day, checks, scraped) VALUES ($1, $2::date, $3, $4)`, [
        userId,
        day,
        checks,
        scraped,
      ]);
    }
    const judges: [number, string, string, number, number, number][] = [
      [alice.userId, utcDay(0), "http://judge-a.example/", 5, 2, 1],
      [alice.userId, utcDay(30), "http://judge-a.example/", 10, 0, 0],
      [alice.userId, utcDay(1), "http://judge-b.example/", 1, 1, 1],
      [bob.userId, utcDay(0), "http://judge-a.example/", 1000, 1000, 1000],
      [bob.userId, utcDay(0), "http://judge-bob.example/", 1, 1, 1],
    ];
    for (const [userId, day, url, elite, anonymous, transparent] of judges) {
      await h.db.pool.query(
        `INSERT INTO judge_daily_stats (user_id, day, judge_url, elite, anonymous, transparent) VALUES ($1, $2::date, $3, $4, $5, $6)`,
        [userId, day, url, elite, anonymous, transparent],
      );
    }

    const info = await dashboard(alice.token);
    expect(info.total_checks).toBe(100 + 20 + 4000 + 50000);
    expect(info.total_scraped).toBe(7 + 3 + 500 + 60000);
    expect(info.total_checks_week).toBe(120);
    expect(info.total_scraped_week).toBe(10);
    expect(info.judge_valid_proxies).toEqual([
      { judge_url: "http://judge-a.example/", elite_proxies: 15, anonymous_proxies: 2, transparent_proxies: 1 },
      { judge_url: "http://judge-b.example/", elite_proxies: 1, anonymous_proxies: 1, transparent_proxies: 1 },
    ]);
    expect(weekStartDay(new Date())).toBe(utcDay(6));
  });

  it("breaks proxies down by reputation and country and picks the caller's top-rated proxy", async () => {
    await insertProxy(alice.userId, "1.1.1.1", { country: "US", label: "good", score: 91.5 });
    const tieLow = await insertProxy(alice.userId, "1.1.1.2", { country: "US", label: "good", score: 97.25 });
    await insertProxy(alice.userId, "1.1.1.3", { country: "DE", label: "good", score: 97.25 });
    await insertProxy(alice.userId, "1.1.1.4", { country: "DE", label: "neutral", score: 55 });
    await insertProxy(alice.userId, "1.1.1.5", { country: "FR", label: "poor", score: 10 });
    await insertProxy(alice.userId, "1.1.1.6", { label: "unknown" });
    await insertProxy(alice.userId, "1.1.1.7", { country: "US", label: "unknown" });
    // Bob's rows must not leak into Alice's numbers, even the better score.
    await insertProxy(bob.userId, "1.1.1.1", { country: "US", label: "good", score: 99.5 });
    await insertProxy(bob.userId, "9.9.9.9", { country: "JP", label: "poor", score: 1 });

    const info = await dashboard(alice.token);
    expect(info.reputation_breakdown).toEqual({ good: 3, neutral: 1, poor: 1, unknown: 2 });
    expect(info.country_breakdown).toEqual([
      { country: "US", count: 3 },
      { country: "DE", count: 2 },
      { country: "FR", count: 1 },
      { country: "N/A", count: 1 },
    ]);
    expect(info.top_reputation_proxy).toEqual({ proxy_id: tieLow, ip: "1.1.1.2", port: 8080, score: 97.25, label: "good" });

    const bobInfo = await dashboard(bob.token);
    expect(bobInfo.reputation_breakdown).toEqual({ good: 1, neutral: 0, poor: 1, unknown: 0 });
    expect(bobInfo.country_breakdown).toEqual([
      { country: "JP", count: 1 },
      { country: "US", count: 1 },
    ]);
    expect(bobInfo.top_reputation_proxy).toMatchObject({ ip: "1.1.1.1", score: 99.5 });
  });

  it("gives the top proxy's score as stored, every digit, as the list page gives it", async () => {
    // A real keeps about seven significant digits; a numeric cast of it rounds to six.
    for (const [score, stored] of [
      [99.123456, 99.12346],
      [87.3, 87.3],
    ] as const) {
      await h.db.pool.query("DELETE FROM proxies WHERE user_id = $1", [alice.userId]);
      await insertProxy(alice.userId, "1.1.1.1", { country: "US", label: "good", score });
      const top = (await dashboard(alice.token)).top_reputation_proxy as { score: number };
      const page = await h.http.get("/api/getProxyPage/1").set("Authorization", `Bearer ${alice.token}`);
      const listed = (page.body as { proxies: Array<{ reputation: { overall: { score: number } } }> }).proxies[0]!.reputation.overall.score;
      expect([top.score, listed]).toEqual([stored, stored]);
    }
  });

  it("keeps the counts equal to a full scan through updates, upserts, deletes and folding", async () => {
    const ids: number[] = [];
    for (let i = 0; i < 20; i++) ids.push(await insertProxy(alice.userId, `2.0.0.${i}`, { country: i % 2 ? "US" : "BR" }));
    await insertProxy(bob.userId, "2.0.0.1", { country: "US" });
    // Multi-row statements, as uploads and checker batches do them.
    await h.db.pool.query(
      `INSERT INTO proxies (user_id, ip, port, country) SELECT $1, '3.0.0.' || i, 3128, 'NL' FROM generate_series(1, 50) i`,
      [alice.userId],
    );
    await h.db.pool.query(
      `UPDATE proxies SET reputation_label = 'good', reputation_score = 80 WHERE user_id = $1 AND country = 'NL' AND port = 3128 AND ip LIKE '3.0.0.1%'`,
      [alice.userId],
    );
    await h.db.pool.query(`UPDATE proxies SET latest_check = now() WHERE user_id = $1`, [alice.userId]);
    await h.db.pool.query(
      `INSERT INTO proxies (user_id, ip, port, country) VALUES ($1, '3.0.0.1', 3128, 'NL'), ($1, '3.0.0.99', 3128, 'SE')
       ON CONFLICT (user_id, ip, port, username, password) DO UPDATE SET reputation_label = 'poor'`,
      [alice.userId],
    );
    await h.db.pool.query(`DELETE FROM proxies WHERE id = ANY($1::int[])`, [ids.slice(0, 5)]);
    expect(await dashboard(alice.token)).toMatchObject(await groundTruth(alice.userId));

    // Enough single-row statements to pile up the delta log; a read folds it.
    for (let i = 0; i < FOLD_SLACK_ROWS; i++) {
      // Every visit moves the proxy to the other country, so every statement logs two rows.
      await h.db.pool.query(`UPDATE proxies SET country = $2 WHERE id = $1`, [ids[5 + (i % 15)], Math.floor(i / 15) % 2 ? "CA" : "MX"]);
    }
    const logRows = async () =>
      (await h.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM user_proxy_counts WHERE user_id = $1`, [alice.userId]))
        .rows[0]!.n;
    expect(await logRows()).toBeGreaterThan(FOLD_SLACK_ROWS);
    const expected = await groundTruth(alice.userId);
    expect(await dashboard(alice.token)).toMatchObject(expected);
    // Plus the alive dimension (the list's Alive / Dead totals): one row per status present.
    const statuses = (await h.db.pool.query<{ n: number }>(`SELECT count(DISTINCT alive)::int AS n FROM proxies WHERE user_id = $1`, [alice.userId])).rows[0]!.n;
    const keys = expected.country_breakdown.length + Object.values(expected.reputation_breakdown).filter((n) => n > 0).length + statuses;
    expect(await logRows()).toBe(keys);
    expect(await dashboard(alice.token)).toMatchObject(expected);
    expect(await dashboard(bob.token)).toMatchObject(await groundTruth(bob.userId));
  });

  it("stays exact when folds race each other and concurrent writers", async () => {
    for (let round = 0; round < 3; round++) {
      const writers = Array.from({ length: 8 }, (_, w) =>
        (async () => {
          for (let i = 0; i < 12; i++) {
            await h.db.pool.query(
              `INSERT INTO proxies (user_id, ip, port, country, reputation_label) VALUES ($1, $2, 1080, $3, $4)`,
              [alice.userId, `4.${round}.${w}.${i}`, ["US", "DE", "FR"][i % 3], ["good", "poor", "unknown"][w % 3]],
            );
            if (i % 4 === 3) {
              await h.db.pool.query(`DELETE FROM proxies WHERE user_id = $1 AND ip = $2`, [alice.userId, `4.${round}.${w}.${i - 1}`]);
            }
          }
        })(),
      );
      // Readers keep reading (and folding) while the writers write.
      const readers = Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 4; i++) await dashboard(alice.token);
      });
      await Promise.all([...writers, ...readers]);
      // Readers above folded concurrently with writes; the totals must still be exact.
      expect(await dashboard(alice.token)).toMatchObject(await groundTruth(alice.userId));
    }
  });
});
