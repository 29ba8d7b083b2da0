import http, { type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
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
    // A wait far longer than the test's, so that none of the six times out while the test counts them.
    h = await startGatewayHarness({ API_PAGE_QUERY_CONCURRENCY: "2", API_PAGE_QUERY_WAIT_MS: "120000" });
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

describe("list pages: a wait in line has a deadline, and a client that left is not served", () => {
  let h: GatewayHarness;
  let token: string;
  let locker: pg.Client;
  let observer: pg.Client;

  beforeAll(async () => {
    h = await startGatewayHarness({ API_PAGE_QUERY_CONCURRENCY: "1", API_PAGE_QUERY_WAIT_MS: "1000" });
    ({ token } = await h.register());
    await insertProxy(h.db.pool, await userIdOfToken(h, token), { ip: "45.1.2.3", port: 8080, country: "US" });
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

  const metric = async (series: string): Promise<number> => {
    const text = (await h.http.get("/metrics")).text as string;
    const escaped = series.replace(/[{}]/g, "\\$&");
    // A labelled counter not yet incremented has no line: zero.
    return Number(new RegExp(`^${escaped} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
  };
  const state = async () => ({
    running: await metric('svc_page_statements{state="running"}'),
    waiting: await metric('svc_page_statements{state="waiting"}'),
  });
  const dropped = (reason: string) => metric(`svc_page_statements_dropped_total{reason="${reason}"}`);
  const blockedInPostgres = async (): Promise<number> =>
    (
      await observer.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%string_agg(ROW(%'`,
      )
    ).rows[0]?.n ?? -1;
  /** Takes the one place with a page statement held at a lock; `release()` lets it finish and returns its response. */
  const holdThePlace = async () => {
    await locker.query("BEGIN");
    await locker.query("LOCK TABLE user_proxy_counts IN ACCESS EXCLUSIVE MODE");
    const holder = h.http.get("/api/getProxyPage/1").set("Authorization", `Bearer ${token}`).then((res) => res);
    await waitFor(async () => (await state()).running === 1 && (await blockedInPostgres()) === 1, { what: "one page statement at the lock" });
    return {
      async release() {
        await locker.query("COMMIT");
        return holder;
      },
    };
  };

  it("answers 503 with Retry-After after API_PAGE_QUERY_WAIT_MS, the fast path and the pipeline waiting once together, and GraphQL's proxies page in the same line", async () => {
    const timedOutBefore = await dropped("wait_timeout");
    const place = await holdThePlace();
    let holder: request.Response;
    try {
      const [fast, pipelined, graphql] = await Promise.all([
        h.http.get("/api/getProxyPage/1").set("Authorization", `Bearer ${token}`),
        request(h.service.app).get("/api/getProxyPage/2").set("Authorization", `Bearer ${token}`),
        h.http.post("/api/graphql").set("Authorization", `Bearer ${token}`).send({ query: "{ proxies(page: 1) { total } }" }),
      ]);
      for (const res of [fast, pipelined]) {
        expect(res.status).toBe(503);
        expect(res.body).toEqual({ error: "Too many list pages are being read at once; try again shortly" });
        expect(res.headers["retry-after"]).toBe("1");
        expect(res.headers["x-request-id"]).toEqual(expect.any(String));
      }
      expect(graphql.status).toBe(200);
      expect(graphql.body).toEqual({
        data: null,
        errors: [expect.objectContaining({ message: "Too many list pages are being read at once; try again shortly", extensions: { code: "SERVICE_UNAVAILABLE" } })],
      });
      // Statements that timed out: one for each REST page (the fast path's request did not queue again in the
      // pipeline it was handed to), two for GraphQL's (its page and its total, run side by side).
      expect((await dropped("wait_timeout")) - timedOutBefore).toBe(4);
      // The held statement kept its place all along, and none of the three reached PostgreSQL.
      expect(await state()).toEqual({ running: 1, waiting: 0 });
      expect(await blockedInPostgres()).toBe(1);
    } finally {
      holder = await place.release();
    }
    expect(holder.status).toBe(200);
    expect(await state()).toEqual({ running: 0, waiting: 0 });
  });

  it.each([
    ["the fast path", () => h.service.handler],
    ["the Express route", () => h.service.app],
  ])("does not run the statement of a request whose client left while it waited on %s, and serves the next one", async (_path, answerer) => {
    const responses: ServerResponse[] = [];
    const answer = answerer();
    const server = http.createServer((req, res) => {
      responses.push(res);
      answer(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const goneBefore = await dropped("client_gone");
    const timedOutBefore = await dropped("wait_timeout");
    try {
      const place = await holdThePlace();
      let holder: request.Response;
      try {
        const leaving = http.get({ host: "127.0.0.1", port, path: "/api/getProxyPage/1", headers: { Authorization: `Bearer ${token}` } });
        leaving.on("error", () => undefined); // destroyed below
        await waitFor(async () => (await state()).waiting === 1, { what: "the request to wait in line" });
        leaving.destroy();
        await waitFor(() => responses[0]?.destroyed === true, { what: "the gateway to see the client leave" });
        expect(await dropped("client_gone")).toBe(goneBefore);
      } finally {
        holder = await place.release();
      }
      expect(holder.status).toBe(200);
      // Its turn came after the holder's statement, and it was skipped, not run.
      await waitFor(async () => (await dropped("client_gone")) === goneBefore + 1, { what: "the skipped statement to be counted" });
      expect(await state()).toEqual({ running: 0, waiting: 0 });
      expect(await dropped("wait_timeout")).toBe(timedOutBefore);
      const next = await h.http.get("/api/getProxyPage/1").set("Authorization", `Bearer ${token}`);
      expect(next.status).toBe(200);
      expect(next.body).toEqual({ proxies: [expect.objectContaining({ ip: "45.1.2.3" })], total: 1 });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("list pages: users take turns for the places", () => {
  let h: GatewayHarness;
  let locker: pg.Client;

  beforeAll(async () => {
    // One place, and a wait far longer than the test's.
    h = await startGatewayHarness({ API_PAGE_QUERY_CONCURRENCY: "1", API_PAGE_QUERY_WAIT_MS: "120000" });
    locker = new pg.Client({ connectionString: h.database.url });
    await locker.connect();
  });
  afterAll(async () => {
    await locker.end();
    await h.close();
  });

  const waitingStatements = async (): Promise<number> =>
    Number(/^svc_page_statements\{state="waiting"\} (\d+)$/m.exec((await h.http.get("/metrics")).text as string)?.[1] ?? Number.NaN);

  it("serves a second user's page after one more of the first user's, not after the first user's whole burst", async () => {
    const a = await h.register();
    const b = await h.register();
    for (const { token } of [a, b]) await insertProxy(h.db.pool, await userIdOfToken(h, token), { ip: "45.1.2.3", port: 8080, country: "US" });
    // The order in which the gateway finished its responses, by user.
    const finished: string[] = [];
    const server = http.createServer((req, res) => {
      const who = req.headers.authorization === `Bearer ${a.token}` ? "A" : "B";
      res.on("finish", () => finished.push(who));
      h.service.handler(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const page = (token: string) =>
      new Promise<number>((resolve, reject) => {
        http
          .get({ host: "127.0.0.1", port, path: "/api/getProxyPage/1", headers: { Authorization: `Bearer ${token}` } }, (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode ?? 0));
          })
          .on("error", reject);
      });
    try {
      await locker.query("BEGIN");
      await locker.query("LOCK TABLE user_proxy_counts IN ACCESS EXCLUSIVE MODE");
      const pending: Promise<number>[] = [];
      try {
        // A's first page holds the place at the lock; three more of A's wait, then one of B's.
        pending.push(page(a.token));
        for (let i = 1; i <= 3; i++) {
          pending.push(page(a.token));
          await waitFor(async () => (await waitingStatements()) === i, { what: `${i} of A's pages waiting` });
        }
        pending.push(page(b.token));
        await waitFor(async () => (await waitingStatements()) === 4, { what: "B's page waiting too" });
      } finally {
        await locker.query("COMMIT");
      }
      expect(await Promise.all(pending)).toEqual([200, 200, 200, 200, 200]);
      // First come first served would have been A A A A B.
      expect(finished).toEqual(["A", "A", "B", "A", "A"]);
    } finally {
      await locker.query("ROLLBACK").catch(() => undefined);
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
