import pg from "pg";
import request from "supertest";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { insertProxy, userIdOfToken } from "../../test-support/proxy-fixtures.js";

/**
 * API_PAGE_QUERY_CONCURRENCY: the list pages of one process share one limit
 * on statements running at once, whichever way a request is answered (the
 * fast path or the Express route); the rest wait in line and are answered
 * when a statement finishes.
 */
describe("list pages: at most API_PAGE_QUERY_CONCURRENCY statements at once", () => {
  let h: GatewayHarness;
  let token: string;
  /** Holds a lock every unfiltered page statement needs, so statements pile up where they can be counted. */
  let locker: pg.Client;
  let observer: pg.Client;

  beforeAll(async () => {
    h = await startGatewayHarness({ API_PAGE_QUERY_CONCURRENCY: "2" });
    ({ token } = await h.register());
    await insertProxy(h.db.pool, await userIdOfToken(h, token), { ip: "45.1.2.3", port: 8080, country: "US" });
    // Connections of their own: the gateway's pool is what is under test.
    locker = new pg.Client({ connectionString: h.database.url });
    observer = new pg.Client({ connectionString: h.database.url });
    await locker.connect();
    await observer.connect();
  });
  afterAll(async () => {
    await locker.end();
    await observer.end();
    await h.close();
  });

  const pageStatements = async (): Promise<{ running: number; waiting: number }> => {
    const text = (await h.http.get("/metrics")).text as string;
    const value = (state: string): number => Number(new RegExp(`^svc_page_statements\\{state="${state}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? Number.NaN);
    return { running: value("running"), waiting: value("waiting") };
  };
  /** Page statements of the gateway waiting for the lock in PostgreSQL. */
  const blockedInPostgres = async (): Promise<number> =>
    (
      await observer.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%string_agg(ROW(%'`,
      )
    ).rows[0]?.n ?? -1;

  it("runs two page statements at once from the fast path and the Express route together, queues four, then answers all six", async () => {
    const pipeline = request(h.service.app);
    await locker.query("BEGIN");
    await locker.query("LOCK TABLE user_proxy_counts IN ACCESS EXCLUSIVE MODE");
    let responses: request.Response[];
    try {
      const pending = [h.http, h.http, h.http, pipeline, pipeline, pipeline].map((client) =>
        client
          .get("/api/getProxyPage/1")
          .set("Authorization", `Bearer ${token}`)
          .then((res) => res),
      );
      await waitFor(async () => {
        const state = await pageStatements();
        return state.running === 2 && state.waiting === 4;
      }, { what: "two page statements running and four waiting" });
      // The two running are the ones PostgreSQL holds at the lock; the four waiting never reached it.
      await waitFor(async () => (await blockedInPostgres()) === 2, { what: "two page statements at the lock" });
      expect(await pageStatements()).toEqual({ running: 2, waiting: 4 });
      expect(await blockedInPostgres()).toBe(2);
      await locker.query("COMMIT");
      responses = await Promise.all(pending);
    } finally {
      await locker.query("ROLLBACK").catch(() => undefined);
    }
    for (const res of responses) {
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ proxies: [expect.objectContaining({ ip: "45.1.2.3", port: 8080 })], total: 1 });
    }
    expect(await pageStatements()).toEqual({ running: 0, waiting: 0 });
  });
});
