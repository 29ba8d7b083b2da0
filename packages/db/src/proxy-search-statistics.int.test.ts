import pg from "pg";
import { createTestDatabase, type TestDatabase } from "@roost/testkit";

/**
 * The IP-prefix search is planned from the ip column's histogram: with
 * PostgreSQL's default 100 buckets, the estimate of a narrow prefix swung
 * between ~1/70 and ~1.5x of the truth from one ANALYZE to the next, and the
 * low estimate chose a plan that fetched every match from the heap
 * (migration 20261126000000_proxy_ip_statistics). Each ANALYZE samples
 * afresh, so several must all estimate well; with the default target, one
 * of ten or more misses by far more than 2x in nearly every run.
 */
describe("proxies: the ip column's statistics", () => {
  let db: TestDatabase;
  let client: pg.Client;
  beforeAll(async () => {
    db = await createTestDatabase();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    // 150,000 addresses spread like a real list: 64 first octets, the other three bytes scattered.
    await client.query(
      `INSERT INTO proxies (user_id, ip, port)
       SELECT 1, (20 + (i % 64) * 2) || '.' || ((r >> 16) & 255) || '.' || ((r >> 8) & 255) || '.' || (r & 255), 8080
         FROM (SELECT i, ((i / 64)::bigint * 40503 % 16777216)::int AS r FROM generate_series(0, 149999) i) s`,
    );
  }, 60_000);
  afterAll(async () => {
    await client.end();
    await db.drop();
  });

  it("keeps 1,000 histogram buckets for ip", async () => {
    const { rows } = await client.query<{ target: number }>(
      "SELECT attstattarget AS target FROM pg_attribute WHERE attrelid = 'proxies'::regclass AND attname = 'ip'",
    );
    expect(rows[0]?.target).toBe(1000);
  });

  it("estimates a narrow IP prefix within 2x of its true count after every ANALYZE", async () => {
    const prefix = "44.1%";
    const { rows } = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM proxies WHERE user_id = 1 AND ip LIKE $1", [prefix]);
    const actual = rows[0]?.n ?? 0;
    // Under 1% of the rows: inside one bucket of the default histogram.
    expect(actual).toBeGreaterThan(300);
    expect(actual).toBeLessThan(1500);
    const estimates: number[] = [];
    for (let k = 0; k < 10; k++) {
      await client.query("ANALYZE proxies");
      const plan = await client.query<{ "QUERY PLAN": [{ Plan: { "Plan Rows": number } }] }>(
        `EXPLAIN (FORMAT JSON) SELECT id FROM proxies WHERE user_id = 1 AND ip LIKE '${prefix}'`,
      );
      estimates.push(plan.rows[0]?.["QUERY PLAN"][0].Plan["Plan Rows"] ?? 0);
    }
    const far = estimates.filter((estimate) => estimate < actual / 2 || estimate > actual * 2);
    expect({ actual, far }).toEqual({ actual, far: [] });
  }, 60_000);
});
