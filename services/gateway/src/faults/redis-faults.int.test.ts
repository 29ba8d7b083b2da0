import type { Response } from "supertest";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../test-support/gateway.harness.js";
import { startOwnedRedis, type OwnedRedis } from "../test-support/owned-redis.js";
import { counterValue, HIGH_LIMIT } from "../test-support/rate-limit-checks.js";
import { bearer } from "../test-support/token-claims.js";

/**
 * Redis (a redis-server of this file's own) frozen with SIGSTOP and killed
 * under a running gateway: login, list, export and settings answer within
 * 15 s with JSON (served, since revocation fails open and limits count
 * in-process, or 503 with Retry-After), a queue hand-off gives up after its
 * deadline, an upload still answers 200 with its rows committed and due, and
 * everything works again by itself once Redis is back, nothing committed lost.
 */

const ANSWER_WITHIN_MS = 15_000;

let redis: OwnedRedis;
let h: GatewayHarness;
let token: string;
let email: string;
let password: string;

beforeAll(async () => {
  redis = await startOwnedRedis();
  h = await startGatewayHarness({
    REDIS_URL: redis.url,
    RATE_LIMIT_LOGIN_PER_MINUTE: HIGH_LIMIT,
    RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL: HIGH_LIMIT,
    RATE_LIMIT_LOGIN_FAILURES_PER_IP: HIGH_LIMIT,
  });
  await h.service.start();
  ({ token, email, password } = await h.register());
  const upload = await h.http.post("/api/addProxies").set(bearer(token)).attach("file", Buffer.from("1.2.3.4:8080\n5.6.7.8:3128\n"), "p.txt");
  expect(upload.status).toBe(200);
}, 60_000);
afterAll(async () => {
  redis?.resume();
  await h?.close();
  await redis?.close();
}, 60_000);

/** A new public address per upload, so each one stores a proxy and hands it to checking. */
let uploaded = 0;
const nextAddress = (): string => `11.0.${Math.floor(uploaded / 250)}.${(uploaded++ % 250) + 1}`;

const proxyCount = async (): Promise<number> => (await h.http.get("/api/getProxyCount").set(bearer(token))).body as number;
const handOffMisses = (): Promise<number> => counterValue(h.deps.metrics, "svc_queue_handoff_failures_total", "queue", "check");

const session = {
  login: () => h.http.post("/api/login").send({ email, password }),
  wrongPassword: () => h.http.post("/api/login").send({ email, password: "Wrong-Password-1" }),
  checkLogin: () => h.http.get("/api/checkLogin").set(bearer(token)),
  list: () => h.http.get("/api/getProxyPage/1").set(bearer(token)),
  export: () => h.http.post("/api/user/export").set(bearer(token)).send({ outputFormat: "json", proxyStatus: "all", filter: false }),
  settings: () => h.http.get("/api/user/settings").set(bearer(token)),
  saveSettings: () => h.http.post("/api/user/settings").set(bearer(token)).send({ retries: 2 }),
  upload: () => h.http.post("/api/addProxies").set(bearer(token)).attach("file", Buffer.from(`${nextAddress()}:8080\n`), "p.txt"),
  readyz: () => h.http.get("/readyz"),
  // Routes that read Redis themselves (the rotator registry, the scrape queue).
  rotators: () => h.http.get("/api/rotatingProxies").set(bearer(token)),
  rotatorInstances: () => h.http.get("/api/rotatingProxies/instances").set(bearer(token)),
  addSources: () => h.http.post("/api/scrapingSources").set(bearer(token)).send({ scrapeSourceTextarea: "https://example.com/list.txt" }),
};

async function timed(send: () => PromiseLike<Response>): Promise<{ res: Response; elapsedMs: number }> {
  const started = Date.now();
  const res = await send();
  return { res, elapsedMs: Date.now() - started };
}

/** Within the bound, JSON (errors always), and either its normal answer or 503 with Retry-After. */
function expectAnswered(name: string, { res, elapsedMs }: { res: Response; elapsedMs: number }, normal: number): void {
  expect([name, elapsedMs < ANSWER_WITHIN_MS]).toEqual([name, true]);
  // An export is a file (text/plain); every other answer, and every error, is JSON.
  if (name !== "export" || res.status >= 400) expect([name, res.headers["content-type"]]).toEqual([name, expect.stringMatching(/^application\/json/)]);
  expect([name, [normal, 503].includes(res.status)]).toEqual([name, true]);
  if (res.status === 503) expect([name, Number(res.headers["retry-after"]) >= 1]).toEqual([name, true]);
  if (res.status >= 400) expect([name, res.body]).toEqual([name, { error: expect.any(String) }]);
}

const NORMAL: Record<keyof typeof session, number> = {
  login: 200,
  wrongPassword: 401,
  checkLogin: 200,
  list: 200,
  export: 200,
  settings: 200,
  saveSettings: 200,
  upload: 200,
  readyz: 200,
  rotators: 200,
  rotatorInstances: 200,
  addSources: 200,
};

async function underFault(): Promise<void> {
  const missesBefore = await handOffMisses();
  const results = await Promise.all(Object.entries(session).map(async ([name, send]) => [name, await timed(send)] as const));
  for (const [name, result] of results) {
    // /readyz reports Redis down: 503 not_ready, by design.
    if (name === "readyz") {
      expect(result.elapsedMs).toBeLessThan(ANSWER_WITHIN_MS);
      expect(result.res.body.components.redis.status).toBe("down");
      continue;
    }
    expectAnswered(name, result, NORMAL[name as keyof typeof session]);
  }
  // The upload's rows are committed before the hand-off: 200 with its counters, the miss counted,
  // and the new proxy due at once, so the checker's scheduler finds it without the queue.
  const upload = results.find(([name]) => name === "upload")?.[1].res;
  expect([upload?.status, upload?.body]).toEqual([200, { proxyCount: 1, details: expect.objectContaining({ submittedCount: 1, parsedCount: 1 }) }]);
  expect(await handOffMisses()).toBe(missesBefore + 1);
  const { rows } = await h.db.pool.query<{ due: boolean }>("SELECT next_check_at <= now() AS due FROM proxies WHERE ip = $1", [`11.0.${Math.floor((uploaded - 1) / 250)}.${((uploaded - 1) % 250) + 1}`]);
  expect(rows).toEqual([{ due: true }]);
  // A refresh must revoke the old token in Redis: refused with 503 and Retry-After, or done.
  const fresh = results.find(([name]) => name === "login")?.[1].res.body as { token: string };
  expectAnswered("refresh", await timed(() => h.http.post("/api/refreshToken").set(bearer(fresh.token))), 200);
  // A queue hand-off gives up at its deadline instead of waiting for Redis.
  const started = Date.now();
  await expect(h.deps.queues.maintenance.queue.add("fault-probe", {})).rejects.toThrow();
  expect(Date.now() - started).toBeLessThan(5_000);
}

async function expectRecovered(): Promise<void> {
  await waitFor(async () => (await h.http.get("/readyz")).status === 200, { timeoutMs: 30_000, what: "readiness to return" });
  // Nothing committed is lost: the two proxies of the set-up and one per upload so far.
  expect(await proxyCount()).toBe(2 + uploaded);
  for (const [name, send] of Object.entries(session)) expect([name, (await send()).status]).toEqual([name, NORMAL[name as keyof typeof session]]);
  await waitFor(async () => (await h.deps.queues.maintenance.queue.add("fault-probe", {}).then(() => true, () => false)), {
    timeoutMs: 15_000,
    what: "queue hand-offs to work again",
  });
}

describe("Redis faults", () => {
  it("frozen (SIGSTOP): every request answers within 15 s; back by itself after SIGCONT", async () => {
    await session.list().expect(200);
    redis.pause();
    try {
      await underFault();
    } finally {
      redis.resume();
    }
    await expectRecovered();
  }, 90_000);

  it("killed (SIGKILL) and restarted (empty): every request answers within 15 s; back by itself", async () => {
    await redis.kill();
    try {
      await underFault();
    } finally {
      await redis.start();
    }
    await expectRecovered();
  }, 90_000);
});
