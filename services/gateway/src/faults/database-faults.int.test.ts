import type { Response } from "supertest";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../test-support/gateway.harness.js";
import { startOwnedPostgres, type OwnedPostgres } from "../test-support/owned-postgres.js";
import { startOwnedRedis, type OwnedRedis } from "../test-support/owned-redis.js";
import { HIGH_LIMIT } from "../test-support/rate-limit-checks.js";
import { bearer } from "../test-support/token-claims.js";

/**
 * PostgreSQL frozen (SIGSTOP), stopped and killed (SIGKILL) under a running
 * gateway, with the default deadlines: login, upload, list, export and settings
 * each answer within 15 s with JSON (503 + Retry-After), service returns by
 * itself, and nothing committed is lost.
 */

const ANSWER_WITHIN_MS = 15_000;

let pg: OwnedPostgres;
let redis: OwnedRedis;
let h: GatewayHarness;
let token: string;
let email: string;
let password: string;
/** Proxies the user has committed so far. */
let committed = 2;

beforeAll(async () => {
  [pg, redis] = await Promise.all([startOwnedPostgres(), startOwnedRedis()]);
  // The login limits stay out of the way of the polling below.
  h = await startGatewayHarness({
    DATABASE_URL: pg.databaseUrl,
    REDIS_URL: redis.url,
    RATE_LIMIT_LOGIN_PER_MINUTE: HIGH_LIMIT,
    RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL: HIGH_LIMIT,
    RATE_LIMIT_LOGIN_FAILURES_PER_IP: HIGH_LIMIT,
  });
  ({ token, email, password } = await h.register());
  const upload = await h.http.post("/api/addProxies").set(bearer(token)).attach("file", Buffer.from("1.2.3.4:8080\n5.6.7.8:3128\n"), "p.txt");
  expect(upload.status).toBe(200);
}, 120_000);
afterAll(async () => {
  await pg?.resume();
  await h?.close();
  await Promise.all([pg?.close(), redis?.close()]);
}, 60_000);

/** Each request of the usual session, timed. */
const session = {
  login: () => h.http.post("/api/login").send({ email, password }),
  list: () => h.http.get("/api/getProxyPage/1").set(bearer(token)),
  export: () => h.http.post("/api/user/export").set(bearer(token)).send({ outputFormat: "json", proxyStatus: "all", filter: false }),
  settings: () => h.http.get("/api/user/settings").set(bearer(token)),
  saveSettings: () => h.http.post("/api/user/settings").set(bearer(token)).send({ retries: 2 }),
  // A proxy the user already has: served, it stores nothing new.
  upload: () => h.http.post("/api/addProxies").set(bearer(token)).field("proxyTextarea", "1.2.3.4:8080"),
};

async function timed(send: () => PromiseLike<Response>): Promise<{ res: Response; elapsedMs: number }> {
  const started = Date.now();
  const res = await send();
  return { res, elapsedMs: Date.now() - started };
}

function expectUnavailable(name: string, { res, elapsedMs }: { res: Response; elapsedMs: number }): void {
  expect([name, elapsedMs < ANSWER_WITHIN_MS]).toEqual([name, true]);
  expect([name, res.status]).toEqual([name, 503]);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  expect(res.body).toEqual({ error: expect.any(String) });
  expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
}

async function expectServedAgain(): Promise<void> {
  await waitFor(async () => (await session.settings()).status === 200, { timeoutMs: 30_000, what: "the database to answer again" });
  for (const [name, send] of Object.entries(session)) expect([name, (await send()).status]).toEqual([name, 200]);
  // Nothing committed before the fault is lost.
  expect((await h.http.get("/api/getProxyCount").set(bearer(token))).body).toBe(committed);
}

/** With PostgreSQL brought down by `down`, the whole session answers 503 in time; started again, it is served. */
async function expectUnavailableUntilStarted(down: () => Promise<void>): Promise<void> {
  await down();
  try {
    const results = await Promise.all(Object.entries(session).map(async ([name, send]) => [name, await timed(send)] as const));
    for (const [name, result] of results) expectUnavailable(name, result);
  } finally {
    await pg.start();
  }
  await expectServedAgain();
}

describe("PostgreSQL faults", () => {
  it("frozen (SIGSTOP): every request answers 503 {error} with Retry-After within 15 s; back after SIGCONT", async () => {
    await expectServedAgain();
    await pg.pause();
    try {
      const [results, graphql] = await Promise.all([
        Promise.all(Object.entries(session).map(async ([name, send]) => [name, await timed(send)] as const)),
        timed(() => h.http.post("/api/graphql").set(bearer(token)).send({ query: "{ dashboard { total_checks } }" })),
      ]);
      for (const [name, result] of results) expectUnavailable(name, result);
      // GraphQL keeps its own shape: the field's error says SERVICE_UNAVAILABLE, not an internal error.
      expect(graphql.elapsedMs).toBeLessThan(ANSWER_WITHIN_MS);
      expect((graphql.res.body as { errors?: { extensions?: { code?: string } }[] }).errors?.[0]?.extensions?.code).toBe("SERVICE_UNAVAILABLE");
    } finally {
      await pg.resume();
    }
    await expectServedAgain();
  }, 60_000);

  it("stopped: every request answers 503 within 15 s; back once it is started again", async () => {
    await expectUnavailableUntilStarted(() => pg.stop());
  }, 90_000);

  it("killed (SIGKILL, every process): every request answers 503 within 15 s; back after a restart, the last commit kept", async () => {
    // Committed just before the crash: PostgreSQL must recover it from its WAL.
    const upload = await h.http.post("/api/addProxies").set(bearer(token)).field("proxyTextarea", "9.10.11.12:8080");
    expect([upload.status, upload.body.proxyCount]).toEqual([200, 1]);
    committed++;
    await expectUnavailableUntilStarted(() => pg.kill());
  }, 90_000);
});
