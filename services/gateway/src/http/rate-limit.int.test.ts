import request from "supertest";
import { createDatabase } from "@roost/db";
import { createLogger, createMetrics } from "@roost/observability";
import { createApp } from "../app.js";
import { buildGatewayDeps } from "../gateway.wiring.js";
import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../test-support/gateway.harness.js";
import { counterValue, expect429, HIGH_LIMIT, rateLimitBlocks } from "../test-support/rate-limit-checks.js";

/** Small limits through the same env vars an operator sets; the other limits stay out of the way. */
const limits = (overrides: Record<string, string>) => ({
  RATE_LIMIT_LOGIN_PER_MINUTE: HIGH_LIMIT,
  RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL: HIGH_LIMIT,
  RATE_LIMIT_LOGIN_FAILURES_PER_IP: HIGH_LIMIT,
  RATE_LIMIT_REGISTER_PER_MINUTE: HIGH_LIMIT,
  ...overrides,
});

describe("rate limits", () => {
  let h: GatewayHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });
  const start = async (env: Record<string, string>) => {
    h = await startGatewayHarness(limits(env));
    return h;
  };
  const login = (g: GatewayHarness, email: string, password: string) => g.http.post("/api/login").send({ email, password });

  it("login: RATE_LIMIT_LOGIN_PER_MINUTE requests per IP, then 429 even with the right password", async () => {
    const g = await start({ RATE_LIMIT_LOGIN_PER_MINUTE: "4" });
    const { email } = await g.register();
    for (let i = 0; i < 4; i++) expect((await login(g, email, STRONG_PASSWORD)).status).toBe(200);
    expect429(await login(g, email, STRONG_PASSWORD), 60);
    expect429(await login(g, "someone-else@example.com", "Whatever-Pass-1"), 60);
    expect(await rateLimitBlocks(g.deps.metrics, "login_ip")).toBe(2);
  });

  it("failed logins per e-mail: blocked before any credential check, other e-mails unaffected", async () => {
    const g = await start({ RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL: "3" });
    const victim = await g.register("victim@example.com");
    const bystander = await g.register("bystander@example.com");
    for (let i = 0; i < 3; i++) expect((await login(g, victim.email, `Wrong-Password-${i}`)).status).toBe(401);
    const credentialFailures = await counterValue(g.deps.metrics, "svc_auth_failures_total", "reason", "bad_credentials");

    expect429(await login(g, victim.email, STRONG_PASSWORD), 900);
    expect429(await login(g, " VICTIM@Example.com", STRONG_PASSWORD), 900); // the key is the normalised e-mail
    expect429(await login(g, victim.email, "Wrong-Password-9"), 900);
    // No password was checked for the blocked attempts.
    expect(await counterValue(g.deps.metrics, "svc_auth_failures_total", "reason", "bad_credentials")).toBe(credentialFailures);
    expect(await rateLimitBlocks(g.deps.metrics, "login_failures_email")).toBe(3);

    expect((await login(g, bystander.email, STRONG_PASSWORD)).status).toBe(200);
  });

  it("failed logins per e-mail: the Redis key is a short hash; input that is no e-mail writes no per-e-mail key", async () => {
    const g = await start({ RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL: "3" });
    const huge = `${"a".repeat(900 * 1024)}@example.com`;
    for (let i = 0; i < 3; i++) expect((await login(g, huge, STRONG_PASSWORD)).status).toBe(400);
    expect((await login(g, "not an e-mail", STRONG_PASSWORD)).status).toBeLessThan(500);
    expect((await login(g, "Someone@Example.com", "Wrong-Password-1")).status).toBe(401);

    const keys = await g.deps.redis.keys(`${g.deps.config.QUEUE_PREFIX}:rl:login_failures_email:*`);
    expect(keys).toHaveLength(1);
    const [key] = keys;
    expect(key?.length).toBeLessThan(120);
    expect(key).not.toMatch(/example/i);
    // The huge input counted only towards the per-IP limits; the per-e-mail limit still applies to real addresses.
    for (let i = 0; i < 2; i++) expect((await login(g, "someone@example.com", "Wrong-Password-1")).status).toBe(401);
    expect429(await login(g, " SOMEONE@example.com ", "Wrong-Password-1"), 900);
  });

  it("failed logins per IP: failures across many e-mails block the IP, also for a correct login", async () => {
    const g = await start({ RATE_LIMIT_LOGIN_FAILURES_PER_IP: "4" });
    const { email } = await g.register();
    for (let i = 0; i < 4; i++) expect((await login(g, `guess${i}@example.com`, STRONG_PASSWORD)).status).toBe(401);
    expect429(await login(g, email, STRONG_PASSWORD), 900);
    expect(await rateLimitBlocks(g.deps.metrics, "login_failures_ip")).toBe(1);
  });

  it("register: RATE_LIMIT_REGISTER_PER_MINUTE requests per IP, the refused one creates nothing", async () => {
    const g = await start({ RATE_LIMIT_REGISTER_PER_MINUTE: "3" });
    for (let i = 0; i < 3; i++) expect((await g.http.post("/api/register").send({ email: `r${i}@example.com`, password: STRONG_PASSWORD })).status).toBe(201);
    expect429(await g.http.post("/api/register").send({ email: "r3@example.com", password: STRONG_PASSWORD }), 60);
    expect(await g.db.prisma.user.count()).toBe(3);
    expect(await rateLimitBlocks(g.deps.metrics, "register_ip")).toBe(1);
  });

  it("counters live in Redis: two gateways on one Redis prefix share them", async () => {
    const g = await start({ RATE_LIMIT_LOGIN_PER_MINUTE: "4" });
    const { email } = await g.register();
    const db = createDatabase({ databaseUrl: g.database.url });
    const metrics = createMetrics({ defaultMetrics: false });
    const second = await buildGatewayDeps(g.deps.config, {
      db,
      redisUrl: g.deps.config.REDIS_URL ?? g.redis.url,
      logger: createLogger({ silent: true }),
      metrics,
      build: { buildVersion: "test", builtAt: new Date(0).toISOString() },
      instanceId: "second-instance",
    });
    try {
      const other = request(createApp(second.deps).app);
      const loginAt = (http: typeof other) => http.post("/api/login").send({ email, password: STRONG_PASSWORD });
      expect((await loginAt(g.http)).status).toBe(200);
      expect((await loginAt(other)).status).toBe(200);
      expect((await loginAt(g.http)).status).toBe(200);
      expect((await loginAt(other)).status).toBe(200);
      expect429(await loginAt(other), 60);
      expect429(await loginAt(g.http), 60);
      expect(await rateLimitBlocks(metrics, "login_ip")).toBe(1);
      expect(await rateLimitBlocks(g.deps.metrics, "login_ip")).toBe(1);
    } finally {
      await second.close();
      await db.close();
    }
  });

  it("ignores X-Forwarded-For without TRUSTED_PROXY_CIDRS: a spoofed header does not reset the per-IP limit", async () => {
    const g = await start({ RATE_LIMIT_LOGIN_PER_MINUTE: "3" });
    for (let i = 0; i < 3; i++) expect((await login(g, "x@example.com", STRONG_PASSWORD).set("X-Forwarded-For", `203.0.113.${i}`)).status).toBe(401);
    expect429(await login(g, "x@example.com", STRONG_PASSWORD).set("X-Forwarded-For", "203.0.113.99"), 60);
    expect429(await login(g, "x@example.com", STRONG_PASSWORD), 60);
  });

  it("honours X-Forwarded-For from a trusted proxy (TRUSTED_PROXY_CIDRS=127.0.0.1/32)", async () => {
    // supertest's socket address is 127.0.0.1 here; an IPv4-mapped ::ffff:127.0.0.1 would match the range too.
    const g = await start({ RATE_LIMIT_LOGIN_PER_MINUTE: "3", TRUSTED_PROXY_CIDRS: "127.0.0.1/32" });
    const from = (client: string) => login(g, "x@example.com", STRONG_PASSWORD).set("X-Forwarded-For", client);
    for (let i = 0; i < 3; i++) expect((await from("203.0.113.10")).status).toBe(401);
    expect429(await from("203.0.113.10"), 60);
    // The client is the right-most address the trusted hop added; a forged left part changes nothing.
    expect429(await from("198.51.100.1, 203.0.113.10"), 60);
    expect((await from("203.0.113.11")).status).toBe(401);
    expect((await login(g, "x@example.com", STRONG_PASSWORD)).status).toBe(401); // the proxy itself, no header
    expect(await rateLimitBlocks(g.deps.metrics, "login_ip")).toBe(2);
  });
});
