import type { RequestListener } from "node:http";
import request, { type Response } from "supertest";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { insertProxy, userIdOfToken } from "../../test-support/proxy-fixtures.js";
import { createPageStatements } from "../../db-limits/page-statements.js";
import { PROXY_PAGE_ROUTE, withProxyPageFastPath } from "./proxy-page.fast-path.js";

/**
 * The fast path must be invisible: for every request, the response through
 * it equals the Express pipeline's (status, body, headers), the plain
 * successful requests are answered without Express, and everything else is
 * handed to Express untouched.
 */

/** Headers that differ between any two responses (or are set by the server per connection). */
const VOLATILE = new Set(["date", "x-request-id", "connection", "keep-alive"]);

function comparable(res: Response): { status: number; body: string; headers: Record<string, unknown> } {
  const headers = Object.fromEntries(Object.entries(res.headers).filter(([name]) => !VOLATILE.has(name)));
  return { status: res.status, body: res.text, headers };
}

describe("GET /api/getProxyPage fast path", () => {
  let h: GatewayHarness;
  let token: string;
  let revoked: string;
  let viaExpress = 0;
  let fast: ReturnType<typeof request>;
  let pipeline: ReturnType<typeof request>;

  beforeAll(async () => {
    // One page statement at a time and a short wait in line, so the 503 of a full line is quick to cause.
    h = await startGatewayHarness({ CORS_ALLOWED_ORIGINS: "https://ui.example.com", API_PAGE_QUERY_CONCURRENCY: "1", API_PAGE_QUERY_WAIT_MS: "300" });
    ({ token } = await h.register());
    const userId = await userIdOfToken(h, token);
    const countries = ["US", "DE", "FR"];
    for (let i = 0; i < 12; i++) {
      await insertProxy(h.db.pool, userId, {
        ip: `45.0.${i}.${i + 1}`,
        port: 8000 + i,
        country: countries[i % 3] ?? "US",
        aliveOn: i % 2 === 0 ? ["http"] : [],
        responseTime: 100 + i,
        reputationLabel: i % 4 === 0 ? "good" : "unknown",
        reputationScore: i % 4 === 0 ? 80 : 0,
      });
    }
    ({ token: revoked } = await h.register());
    expect((await h.http.post("/api/logout").set("Authorization", `Bearer ${revoked}`)).status).toBe(204);
    const app = h.service.app as unknown as RequestListener;
    fast = request(
      withProxyPageFastPath(h.deps, createPageStatements(h.db.pool, { concurrency: 1, maxWaitMs: 300 }, h.deps.metrics), (req, res) => {
        viaExpress++;
        app(req, res);
      }),
    );
    pipeline = request(h.service.app);
  });
  afterAll(async () => {
    await h.close();
  });

  const auth = (as = token) => ({ Authorization: `Bearer ${as}` });

  const answered = ["/api/getProxyPage/1", "/api/getProxyPage/2?pageSize=5", "/api/getProxyPage/1?status=alive&country=US&country=DE&reputation=good",
    "/api/getProxyPage/1?search=45.0.1", "/api/getProxyPage/1?search=45.0.3.4%3A8003", "/api/getProxyPage/1?pageSize=500&protocol=http&maxTimeout=105",
    "/api/getProxyPage/999", "/api/getProxyPage/00001?unknown=1",
    // Empty filter values are ignored, not refused.
    "/api/getProxyPage/1?status=&country=&maxTimeout=&reputation=", "/api/getProxyPage/1?status=alive&country=&maxTimeout="];

  it.each(answered)("answers %s itself, exactly as the pipeline does", async (path) => {
    const before = viaExpress;
    const mine = await fast.get(path).set(auth());
    expect(viaExpress).toBe(before);
    const theirs = await pipeline.get(path).set(auth());
    expect(mine.status).toBe(200);
    expect(comparable(mine)).toEqual(comparable(theirs));
    expect(mine.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("keeps a sane X-Request-ID and replaces an unsafe one, as the pipeline does", async () => {
    const kept = await fast.get("/api/getProxyPage/1").set(auth()).set("X-Request-ID", "trace-42.a:b");
    expect(kept.headers["x-request-id"]).toBe("trace-42.a:b");
    const replaced = await fast.get("/api/getProxyPage/1").set(auth()).set("X-Request-ID", "bad id with spaces");
    expect(replaced.headers["x-request-id"]).not.toBe("bad id with spaces");
  });

  const handedOver: [string, string, Record<string, string>][] = [
    ["no bearer token", "/api/getProxyPage/1", { Authorization: "Basic dXNlcjpwYXNz" }],
    ["a malformed token", "/api/getProxyPage/1", { Authorization: "Bearer not.a.token" }],
    ["a page that is not a number", "/api/getProxyPage/abc", {}],
    ["page 0", "/api/getProxyPage/0", {}],
    ["page 00", "/api/getProxyPage/00", {}],
    ["page +1", "/api/getProxyPage/+1", {}],
    ["page 1e2", "/api/getProxyPage/1e2", {}],
    ["page -1", "/api/getProxyPage/-1", {}],
    ["page 1.5", "/api/getProxyPage/1.5", {}],
    ["a repeated page size", "/api/getProxyPage/1?pageSize=10&pageSize=20", {}],
    ["an empty page size", "/api/getProxyPage/1?pageSize=", {}],
    ["page size 2.0", "/api/getProxyPage/1?pageSize=2.0", {}],
    ["a bad page size", "/api/getProxyPage/1?pageSize=-1", {}],
    ["a bad filter", "/api/getProxyPage/1?status=sleeping", {}],
    ["a NUL in the query", "/api/getProxyPage/1?search=a%00b", {}],
    ["an allowed Origin (CORS headers)", "/api/getProxyPage/1", { Origin: "https://ui.example.com" }],
    ["another Origin", "/api/getProxyPage/1", { Origin: "https://evil.example.com" }],
    ["a trailing slash", "/api/getProxyPage/1/", {}],
    ["another letter case", "/api/GETPROXYPAGE/1", {}],
  ];

  it.each(handedOver)("hands a request with %s to Express, which answers as always", async (_what, path, headers) => {
    const withAuth = "Authorization" in headers ? headers : { ...auth(), ...headers };
    const before = viaExpress;
    const mine = await fast.get(path).set(withAuth);
    expect(viaExpress).toBe(before + 1);
    const theirs = await pipeline.get(path).set(withAuth);
    expect(comparable(mine)).toEqual(comparable(theirs));
  });

  it("hands over a revoked token after asking the revocation store once, and the answer is the pipeline's 401", async () => {
    let asked = 0;
    const isRevoked = h.deps.revocation.isRevoked.bind(h.deps.revocation);
    h.deps.revocation.isRevoked = (t) => {
      asked++;
      return isRevoked(t);
    };
    try {
      const res = await fast.get("/api/getProxyPage/1").set(auth(revoked));
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: "Token revoked" });
      expect(asked).toBe(1);
    } finally {
      h.deps.revocation.isRevoked = isRevoked;
    }
  });

  it("hands HEAD and requests with a body to Express", async () => {
    const before = viaExpress;
    expect((await fast.head("/api/getProxyPage/1").set(auth())).status).toBe(200);
    const withBody = await fast.get("/api/getProxyPage/1").set(auth()).set("Content-Type", "text/plain").send("hello");
    expect(withBody.status).toBe(400);
    expect(viaExpress).toBe(before + 2);
  });

  it("answers a database error itself, with the pipeline's status, body and headers, without running the page again", async () => {
    // The unfiltered page reads the counters: without the table its statement fails (a 500 from both).
    await h.db.pool.query("ALTER TABLE user_proxy_counts RENAME TO user_proxy_counts_away");
    try {
      const before = viaExpress;
      const mine = await fast.get("/api/getProxyPage/1").set(auth());
      expect(viaExpress).toBe(before);
      const theirs = await pipeline.get("/api/getProxyPage/1").set(auth());
      expect(mine.status).toBe(500);
      expect(mine.body).toEqual({ error: "Internal server error" });
      expect(comparable(mine)).toEqual(comparable(theirs));
    } finally {
      await h.db.pool.query("ALTER TABLE user_proxy_counts_away RENAME TO user_proxy_counts");
    }
  });

  it("answers a page whose wait in line ran out itself: the pipeline's 503 with Retry-After", async () => {
    // A lock holds the one running page statement; the next waits past API_PAGE_QUERY_WAIT_MS.
    const locker = await h.db.pool.connect();
    const busy = async (agent: ReturnType<typeof request>): Promise<Response> => {
      await locker.query("BEGIN; LOCK TABLE user_proxy_counts IN ACCESS EXCLUSIVE MODE");
      const held = agent.get("/api/getProxyPage/1").set(auth()).then((r) => r);
      try {
        await waitFor(async () => (await h.db.pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
        )).rows[0]?.n === 1, { timeoutMs: 10_000 });
        return await agent.get("/api/getProxyPage/1").set(auth());
      } finally {
        await locker.query("ROLLBACK");
        expect((await held).status).toBe(200);
      }
    };
    try {
      const before = viaExpress;
      const mine = await busy(fast);
      expect(viaExpress).toBe(before);
      const theirs = await busy(pipeline);
      expect(mine.status).toBe(503);
      expect(mine.headers["retry-after"]).toBe("1");
      expect(comparable(mine)).toEqual(comparable(theirs));
    } finally {
      locker.release();
    }
  });

  it("counts its requests in the same metric series as the pipeline", async () => {
    const count = async () =>
      (await h.deps.metrics.httpRequestsTotal.get()).values.find(
        (v) => v.labels.route === PROXY_PAGE_ROUTE && v.labels.method === "GET" && v.labels.status === "200",
      )?.value ?? 0;
    const start = await count();
    await fast.get("/api/getProxyPage/1").set(auth());
    expect(await count()).toBe(start + 1);
    await pipeline.get("/api/getProxyPage/1").set(auth());
    expect(await count()).toBe(start + 2);
  });
});
