import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../test-support/gateway.harness.js";
import { startOwnedRedis, type OwnedRedis } from "../test-support/owned-redis.js";
import { expect429, HIGH_LIMIT, rateLimitBlocks } from "../test-support/rate-limit-checks.js";

/** Rate limits while the shared store (a redis-server of this test's own) is stopped or frozen. */
describe("rate limits without Redis", () => {
  let owned: OwnedRedis;
  let h: GatewayHarness;
  beforeAll(async () => {
    owned = await startOwnedRedis();
    h = await startGatewayHarness({
      REDIS_URL: owned.url,
      AUTH_REVOCATION_TIMEOUT_MS: "300",
      RATE_LIMIT_LOGIN_PER_MINUTE: HIGH_LIMIT,
      RATE_LIMIT_LOGIN_FAILURES_PER_IP: HIGH_LIMIT,
      RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL: "10",
      RATE_LIMIT_REGISTER_PER_MINUTE: "3",
    });
    await h.register("victim@example.com");
  });
  afterAll(async () => {
    owned.resume();
    await h.close();
    await owned.close();
  });

  const login = (email: string, password: string) => h.http.post("/api/login").send({ email, password });

  it("Redis stopped: wrong passwords for one e-mail are counted in-process, the 11th and 12th get 429; registration and password recovery are limited too", async () => {
    const email = "victim@example.com";
    await owned.stop();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) statuses.push((await login(email, `Wrong-Password-${i}`)).status);
      expect(statuses).toEqual([...Array<number>(10).fill(401), 429, 429]);
      expect429(await login(email, STRONG_PASSWORD), 900);
      expect(await rateLimitBlocks(h.deps.metrics, "login_failures_email")).toBe(3);
      // Registration is limited the same way.
      const registrations: number[] = [];
      for (let i = 0; i < 2; i++) registrations.push((await h.http.post("/api/register").send({ email: `new${i}@example.com`, password: STRONG_PASSWORD })).status);
      // Two of the three were used before Redis went away; the in-process count starts afresh.
      expect(registrations.every((status) => status !== 429)).toBe(true);
      registrations.push((await h.http.post("/api/register").send({ email: "new2@example.com", password: STRONG_PASSWORD })).status);
      registrations.push((await h.http.post("/api/register").send({ email: "new3@example.com", password: STRONG_PASSWORD })).status);
      expect(registrations[3]).toBe(429);
      expect(await rateLimitBlocks(h.deps.metrics, "register_ip")).toBe(1);
      // And password recovery: one request per address per window.
      const forgot = () => h.http.post("/api/forgotPassword").send({ email: "victim@example.com" });
      expect((await forgot()).status).not.toBe(429);
      expect429(await forgot(), 60);
      expect(await rateLimitBlocks(h.deps.metrics, "forgot_password_email")).toBe(1);
    } finally {
      await owned.start();
    }
  });

  it("Redis frozen (SIGSTOP): limited requests still answer promptly and are still limited", async () => {
    // A gateway of its own, which has not seen Redis fail yet.
    const fresh = await startGatewayHarness({ REDIS_URL: owned.url, AUTH_REVOCATION_TIMEOUT_MS: "300", RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL: "10" });
    const { email } = await fresh.register("frozen@example.com");
    const login = (address: string, password: string) => fresh.http.post("/api/login").send({ email: address, password });
    owned.pause();
    try {
      const started = Date.now();
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) statuses.push((await login(email, `Wrong-Password-${i}`)).status);
      expect(statuses).toEqual([...Array<number>(10).fill(401), 429]);
      // One wait on the command timeout per limiter at most, not one per request.
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      owned.resume();
      await fresh.close();
    }
  });
});
