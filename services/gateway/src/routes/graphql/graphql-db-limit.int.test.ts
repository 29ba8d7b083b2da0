import type pg from "pg";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { postGraphql } from "../../test-support/graphql-client.js";

/**
 * One operation never has more than two statements (GRAPHQL_DB_CONCURRENCY)
 * on the database at once, however many aliases it holds. Measured on the
 * gateway's own pool: a connection is checked out ('acquire') for every
 * statement and returned ('release') when it ends, and nothing else uses
 * this test's pool while a request runs. The bound is written out, not read
 * from the constant, so raising the constant fails here. Without the
 * limiter the first two operations below take all 10 connections.
 */

interface GraphqlBody {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions?: Record<string, unknown> }[];
}

/** Connections of `pool` checked out at once, at most, while `run` runs; and how many checkouts there were. */
async function measureConnections<T>(pool: pg.Pool, run: () => Promise<T>): Promise<{ result: T; peak: number; checkouts: number }> {
  // Start from an idle pool: a statement of an earlier request may still be on its way back.
  await waitFor(() => pool.totalCount === pool.idleCount && pool.waitingCount === 0, { what: "an idle pool" });
  let inUse = 0;
  let peak = 0;
  let checkouts = 0;
  const onAcquire = () => {
    checkouts++;
    peak = Math.max(peak, ++inUse);
  };
  const onRelease = () => {
    inUse--;
  };
  pool.on("acquire", onAcquire);
  pool.on("release", onRelease);
  try {
    const result = await run();
    return { result, peak, checkouts };
  } finally {
    pool.off("acquire", onAcquire);
    pool.off("release", onRelease);
  }
}

describe("GraphQL database concurrency per operation", () => {
  let h: GatewayHarness;
  let token: string;
  let proxyId: number;
  const SEEDED = 3000;
  /** Proxies whose IP starts with "1." (every other one); the rest start with "2.". */
  const MATCHING = SEEDED / 2;

  const gql = (query: string, variables?: Record<string, unknown>) => postGraphql(h, query, variables, token);

  beforeAll(async () => {
    h = await startGatewayHarness();
    token = (await h.register()).token;
    const me = await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${token}`);
    const userId = (me.body as { user_id: number }).user_id;
    const { rows } = await h.db.pool.query<{ id: number }>(
      `INSERT INTO proxies (user_id, ip, port, country)
       SELECT $1, CASE WHEN i % 2 = 0 THEN '1.' ELSE '2.' END || (i / 65536) || '.' || (i / 256 % 256) || '.' || (i % 256), 8080, 'DE'
       FROM generate_series(1, ${SEEDED}) AS i RETURNING id`,
      [userId],
    );
    proxyId = rows[0]!.id;
  });
  afterAll(async () => {
    await h.close();
  });

  it("uses no connection before the resolvers run: the bearer check is Redis only", async () => {
    const { result, peak, checkouts } = await measureConnections(h.db.pool, () => gql("{ viewer { role } }"));
    expect([result.status, result.body]).toEqual([200, { data: { viewer: { role: "admin" } } }]);
    expect({ peak, checkouts }).toEqual({ peak: 0, checkouts: 0 });
  });

  it("runs 40 aliases of a searched proxies total at most two statements at a time, and answers each", async () => {
    const aliases = Array.from({ length: 40 }, (_, i) => `p${i}: proxies(page: 1, filter: { search: "1." }) { total }`).join(" ");
    const { result, peak, checkouts } = await measureConnections(h.db.pool, () => gql(`{ ${aliases} }`));

    expect(result.status).toBe(200);
    const body = result.body as GraphqlBody;
    expect(body.errors).toBeUndefined();
    expect(body.data).toEqual(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`p${i}`, { total: MATCHING }])));
    // Each alias runs its page and its total: 80 statements went through the pool, never more than two at once.
    expect(checkouts).toBeGreaterThanOrEqual(80);
    expect(peak).toBeLessThanOrEqual(2);
  });

  it("limits Prisma reads (dashboard, settings) and SQL reads (count, detail, statistics) in one operation alike", async () => {
    const n = 6;
    const repeat = (field: string) => Array.from({ length: n }, (_, i) => field.replace("$i", String(i))).join(" ");
    // One dashboard per operation (the dashboard rule); its four reads go through the limit too.
    const query = `{
      d0: dashboard { total_checks country_breakdown { country count } }
      ${repeat("s$i: viewer { settings { timeout judges { url } } }")}
      ${repeat("c$i: proxyCount")}
      ${repeat(`x$i: proxy(id: ${proxyId}) { port statistics(limit: 5) { id } }`)}
    }`;
    const { result, peak } = await measureConnections(h.db.pool, () => gql(query));

    expect(result.status).toBe(200);
    const body = result.body as GraphqlBody;
    expect(body.errors).toBeUndefined();
    const settings = await h.http.get("/api/user/settings").set("Authorization", `Bearer ${token}`);
    const { timeout } = settings.body as { timeout: number };
    expect(body.data?.d0).toEqual({ total_checks: 0, country_breakdown: [{ country: "DE", count: SEEDED }] });
    for (let i = 0; i < n; i++) {
      expect(body.data?.[`s${i}`]).toEqual({ settings: { timeout, judges: expect.any(Array) } });
      expect(body.data?.[`c${i}`]).toBe(SEEDED);
      expect(body.data?.[`x${i}`]).toEqual({ port: 8080, statistics: [] });
    }
    expect(peak).toBeLessThanOrEqual(2);
  });

  it("runs a settings mutation's transaction as one call and still answers with the stored settings", async () => {
    const mutation = `mutation {
      a: updateUserSettings(input: { timeout: 4000 }) { timeout }
      b: updateUserSettings(input: { timeout: 4500, retries: 2 }) { timeout retries judges { url } }
    }`;
    const { result, peak } = await measureConnections(h.db.pool, () => gql(mutation));
    // Mutations run one after the other: one connection for the transaction, then the settings' three reads two at a time.

    expect(result.status).toBe(200);
    expect(result.body).toEqual({ data: { a: { timeout: 4000 }, b: { timeout: 4500, retries: 2, judges: expect.any(Array) } } });
    expect(peak).toBeLessThanOrEqual(2);
  });
});
