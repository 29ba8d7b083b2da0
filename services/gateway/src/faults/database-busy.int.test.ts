import type pg from "pg";
import { gatewayConfigFromEnv } from "../config/gateway.config.js";
import { startGatewayHarness, type GatewayHarness } from "../test-support/gateway.harness.js";
import { HIGH_LIMIT } from "../test-support/rate-limit-checks.js";
import { bearer } from "../test-support/token-claims.js";

/**
 * The pool-acquire deadline: with every connection of the gateway's pool
 * held, a request waits DATABASE_ACQUIRE_TIMEOUT_MS for one and then answers
 * 503 `{error}` with Retry-After (it answered 500), and is served again once
 * a connection is free.
 */
describe("database pool exhausted", () => {
  const ACQUIRE_TIMEOUT_MS = 800;
  let h: GatewayHarness;
  let token: string;
  let email: string;
  let password: string;
  beforeAll(async () => {
    h = await startGatewayHarness({ DATABASE_ACQUIRE_TIMEOUT_MS: String(ACQUIRE_TIMEOUT_MS), RATE_LIMIT_LOGIN_PER_MINUTE: HIGH_LIMIT });
    ({ token, email, password } = await h.register());
  });
  afterAll(async () => {
    await h.close();
  });

  it("defaults: 5 s to acquire a connection, 10 s per query, on the pool itself", () => {
    const config = gatewayConfigFromEnv({});
    expect([config.DATABASE_ACQUIRE_TIMEOUT_MS, config.DATABASE_QUERY_TIMEOUT_MS]).toEqual([5_000, 10_000]);
    expect(h.db.pool.options).toMatchObject({ connectionTimeoutMillis: ACQUIRE_TIMEOUT_MS, query_timeout: 10_000 });
  });

  it("answers 503 {error} with Retry-After after the acquire deadline, then serves again", async () => {
    const max = h.db.pool.options.max;
    const held: pg.PoolClient[] = [];
    try {
      while (held.length < max) held.push(await h.db.pool.connect());
      const requests = {
        login: () => h.http.post("/api/login").send({ email, password }),
        settings: () => h.http.get("/api/user/settings").set(bearer(token)),
        list: () => h.http.get("/api/getProxyPage/1").set(bearer(token)),
      };
      for (const [name, send] of Object.entries(requests)) {
        const started = Date.now();
        const res = await send();
        const elapsedMs = Date.now() - started;
        expect([name, res.status, res.body]).toEqual([name, 503, { error: expect.any(String) }]);
        expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
        expect([name, elapsedMs >= ACQUIRE_TIMEOUT_MS - 50, elapsedMs < ACQUIRE_TIMEOUT_MS + 5_000]).toEqual([name, true, true]);
      }
    } finally {
      for (const client of held) client.release();
    }
    expect((await h.http.get("/api/user/settings").set(bearer(token))).status).toBe(200);
    expect((await h.http.post("/api/login").send({ email, password })).status).toBe(200);
  }, 30_000);
});
