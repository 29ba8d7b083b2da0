import http, { type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import request from "supertest";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { insertProxy, userIdOfToken } from "../../test-support/proxy-fixtures.js";

/** A gateway under test with its page limits, and what the tests watch it with. Set up in the describe's beforeAll. */
interface PageLimitGateway {
  h: GatewayHarness;
  /** Holds a lock every unfiltered page statement needs, so statements pile up where they can be counted. */
  locker: pg.Client;
  /** List-page statements running and waiting for the limit (`svc_page_statements`). */
  statements(): Promise<{ running: number; waiting: number }>;
  /** `svc_page_statements_dropped_total` for `reason`; 0 before the first. */
  dropped(reason: string): Promise<number>;
  /** The gateway's page statements waiting for the lock in PostgreSQL. */
  blockedInPostgres(): Promise<number>;
}

/** Starts a gateway with `env` for the enclosing describe, with clients of its own (the gateway's pool is what is under test). */
function pageLimitGateway(env: Record<string, string>): PageLimitGateway {
  let observer: pg.Client;
  const gateway = {} as PageLimitGateway;
  beforeAll(async () => {
    gateway.h = await startGatewayHarness(env);
    gateway.locker = new pg.Client({ connectionString: gateway.h.database.url });
    observer = new pg.Client({ connectionString: gateway.h.database.url });
    await gateway.locker.connect();
    await observer.connect();
  });
  afterAll(async () => {
    await gateway.locker.end();
    await observer.end();
    await gateway.h.close();
  });
  /** A series' value; `missing` when the text has no line for it. */
  const metric = async (series: string, missing: number): Promise<number> => {
    const text = (await gateway.h.http.get("/metrics")).text as string;
    const escaped = series.replace(/[{}]/g, "\\$&");
    return Number(new RegExp(`^${escaped} (\\d+)$`, "m").exec(text)?.[1] ?? missing);
  };
  // The gauge's series are set on the first statement: a missing one is a failure to read, not a zero.
  gateway.statements = async () => ({
    running: await metric('svc_page_statements{state="running"}', Number.NaN),
    waiting: await metric('svc_page_statements{state="waiting"}', Number.NaN),
  });
  // A labelled counter not yet incremented has no line: zero.
  gateway.dropped = (reason) => metric(`svc_page_statements_dropped_total{reason="${reason}"}`, 0);
  gateway.blockedInPostgres = async () =>
    (
      await observer.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%string_agg(ROW(%'`,
      )
    ).rows[0]?.n ?? -1;
  return gateway;
}

/** `listener` on a port of its own on 127.0.0.1, for tests that watch or cut the raw connection. */
async function listen(listener: http.RequestListener): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * API_PAGE_QUERY_CONCURRENCY: the list pages of one process share one limit
 * on statements running at once, whichever way a request is answered (the
 * fast path or the Express route); the rest wait in line and are answered
 * when a statement finishes.
 */
describe("list pages: at most API_PAGE_QUERY_CONCURRENCY statements at once", () => {
  // A wait far longer than the test's, so that none of the six times out while the test counts them.
  const gateway = pageLimitGateway({ API_PAGE_QUERY_CONCURRENCY: "2", API_PAGE_QUERY_WAIT_MS: "120000" });
  const { statements: pageStatements, blockedInPostgres } = gateway;
  let token: string;

  beforeAll(async () => {
    ({ token } = await gateway.h.register());
    await insertProxy(gateway.h.db.pool, await userIdOfToken(gateway.h, token), { ip: "45.1.2.3", port: 8080, country: "US" });
  });

  it("runs two page statements at once from the fast path and the Express route together, queues four, then answers all six", async () => {
    const { h, locker } = gateway;
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
  const gateway = pageLimitGateway({ API_PAGE_QUERY_CONCURRENCY: "1", API_PAGE_QUERY_WAIT_MS: "1000" });
  const { statements: state, dropped, blockedInPostgres } = gateway;
  let token: string;

  beforeAll(async () => {
    ({ token } = await gateway.h.register());
    await insertProxy(gateway.h.db.pool, await userIdOfToken(gateway.h, token), { ip: "45.1.2.3", port: 8080, country: "US" });
  });

  /** Takes the one place with a page statement held at a lock; `release()` lets it finish and returns its response. */
  const holdThePlace = async () => {
    const { h, locker } = gateway;
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
    const { h } = gateway;
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
      // Statements that timed out: one per page, GraphQL's included (it reads its page with REST's one
      // statement, page and total together); the fast path's request did not queue again in the pipeline.
      expect((await dropped("wait_timeout")) - timedOutBefore).toBe(3);
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
    ["the fast path", () => gateway.h.service.handler],
    ["the Express route", () => gateway.h.service.app],
  ])("does not run the statement of a request whose client left while it waited on %s, and serves the next one", async (_path, answerer) => {
    const { h } = gateway;
    const responses: ServerResponse[] = [];
    const answer = answerer();
    const server = await listen((req, res) => {
      responses.push(res);
      answer(req, res);
    });
    const { port } = server;
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
      await server.close();
    }
  });
});

describe("list pages: users take turns for the places", () => {
  // One place, and a wait far longer than the test's.
  const gateway = pageLimitGateway({ API_PAGE_QUERY_CONCURRENCY: "1", API_PAGE_QUERY_WAIT_MS: "120000" });
  const waitingStatements = async (): Promise<number> => (await gateway.statements()).waiting;

  it("serves a second user's page after one more of the first user's, not after the first user's whole burst", async () => {
    const { h, locker } = gateway;
    const a = await h.register();
    const b = await h.register();
    for (const { token } of [a, b]) await insertProxy(h.db.pool, await userIdOfToken(h, token), { ip: "45.1.2.3", port: 8080, country: "US" });
    // The order in which the gateway finished its responses, by user.
    const finished: string[] = [];
    const server = await listen((req, res) => {
      const who = req.headers.authorization === `Bearer ${a.token}` ? "A" : "B";
      res.on("finish", () => finished.push(who));
      h.service.handler(req, res);
    });
    const { port } = server;
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
      await server.close();
    }
  });
});
