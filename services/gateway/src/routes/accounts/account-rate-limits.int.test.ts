import type { Metrics } from "@roost/observability";
import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { bearer, claimsOf } from "../../test-support/token-claims.js";
import { counterValue, expect429, HIGH_LIMIT, rateLimitBlocks } from "../../test-support/rate-limit-checks.js";

/**
 * Per-account limits of the token routes (docs/auth.md "Rate limits"):
 * every refresh stores a revoked token id for a week, and every
 * changePassword or deleteAccount runs argon2 (and answers whether the
 * password was right). Small limits through the same env vars an operator
 * sets; the other limits stay out of the way.
 */
const limits = (overrides: Record<string, string>) => ({
  RATE_LIMIT_LOGIN_PER_MINUTE: HIGH_LIMIT,
  RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL: HIGH_LIMIT,
  RATE_LIMIT_LOGIN_FAILURES_PER_IP: HIGH_LIMIT,
  RATE_LIMIT_REGISTER_PER_MINUTE: HIGH_LIMIT,
  RATE_LIMIT_REFRESH_TOKEN_PER_ACCOUNT_PER_MINUTE: HIGH_LIMIT,
  RATE_LIMIT_PASSWORD_CHECKS_PER_ACCOUNT_PER_MINUTE: HIGH_LIMIT,
  RATE_LIMIT_PASSWORD_CHECK_FAILURES_PER_ACCOUNT: HIGH_LIMIT,
  ...overrides,
});
const NEW_PASSWORD = "Battery-Staple-77";

const authFailures = (metrics: Metrics, reason: string) => counterValue(metrics, "svc_auth_failures_total", "reason", reason);

describe("account rate limits", () => {
  let h: GatewayHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });
  const start = async (env: Record<string, string>) => {
    h = await startGatewayHarness(limits(env));
    return h;
  };
  const login = async (g: GatewayHarness, email: string, password = STRONG_PASSWORD) => {
    const res = await g.http.post("/api/login").send({ email, password });
    expect(res.status).toBe(200);
    return res.body.token as string;
  };
  const refresh = (g: GatewayHarness, token: string) => g.http.post("/api/refreshToken").set(bearer(token));
  const changePassword = (g: GatewayHarness, token: string, oldPassword: string, newPassword = NEW_PASSWORD) =>
    g.http.post("/api/changePassword").set(bearer(token)).send({ oldPassword, newPassword });
  const deleteAccount = (g: GatewayHarness, token: string, password: string) => g.http.post("/api/deleteAccount").set(bearer(token)).send({ password });

  it("refreshToken: RATE_LIMIT_REFRESH_TOKEN_PER_ACCOUNT_PER_MINUTE refreshes per account across its sessions, then 429 revoking nothing", async () => {
    const g = await start({ RATE_LIMIT_REFRESH_TOKEN_PER_ACCOUNT_PER_MINUTE: "4" });
    const { token, email } = await g.register();
    const { token: bystander } = await g.register();
    const userId = claimsOf(token).user_id;
    // Two refresh chains of one account share the budget.
    const chains = [token, await login(g, email)];
    for (let i = 0; i < 4; i++) {
      const chain = i % 2;
      const res = await refresh(g, chains[chain]!);
      expect(res.status).toBe(200);
      chains[chain] = res.body.token as string;
    }
    const revokedBefore = await g.db.prisma.revokedToken.count({ where: { userId } });
    expect(revokedBefore).toBe(4);

    for (const current of chains) expect429(await refresh(g, current), 60);
    expect429(await refresh(g, await login(g, email)), 60);
    // Blocked before the revocation write: no new revoked ids, and the tokens still work.
    expect(await g.db.prisma.revokedToken.count({ where: { userId } })).toBe(revokedBefore);
    for (const current of chains) expect((await g.http.get("/api/checkLogin").set(bearer(current))).status).toBe(200);
    expect(await rateLimitBlocks(g.deps.metrics, "refresh_token_account")).toBe(3);

    // Other accounts keep their own budget.
    expect((await refresh(g, bystander)).status).toBe(200);
  });

  it("changePassword and deleteAccount: RATE_LIMIT_PASSWORD_CHECK_FAILURES_PER_ACCOUNT failures per account, then 429 before any password check", async () => {
    const g = await start({ RATE_LIMIT_PASSWORD_CHECK_FAILURES_PER_ACCOUNT: "3" });
    const { token, email } = await g.register();
    const { token: bystander } = await g.register();
    const userId = claimsOf(token).user_id;

    // 20 concurrent wrong guesses: each is counted when it arrives, so at most 3 wrong passwords are
    // checked. Those that overlap in this process are 409 without a password check and are given
    // back when they end, so a guess arriving after such a 409 ended may pass too: how many pass
    // depends on timing, and every other guess is a 429.
    const guesses = await Promise.all(Array.from({ length: 20 }, (_, i) => changePassword(g, token, `Wrong-Password-${i}`)));
    const passed = guesses.filter((r) => r.status !== 429);
    const blocked = guesses.length - passed.length;
    expect(blocked).toBeGreaterThanOrEqual(1);
    expect(passed.filter((r) => r.status === 401).length).toBeLessThanOrEqual(3);
    for (const res of passed) expect([401, 409]).toContain(res.status);
    for (const res of guesses.filter((r) => r.status === 429)) expect429(res, 900);
    const checked = passed.filter((r) => r.status === 401).length;
    expect(checked).toBeGreaterThanOrEqual(1);
    expect(await authFailures(g.deps.metrics, "bad_old_password")).toBe(checked);

    // The right password is refused too, on both routes (they share the count), and nothing was checked.
    expect429(await changePassword(g, token, STRONG_PASSWORD), 900);
    expect429(await deleteAccount(g, token, STRONG_PASSWORD), 900);
    expect429(await deleteAccount(g, await login(g, email), "Wrong-Password-x"), 900);
    expect(await authFailures(g.deps.metrics, "bad_old_password")).toBe(checked);
    expect(await authFailures(g.deps.metrics, "bad_password")).toBe(0);
    expect(await rateLimitBlocks(g.deps.metrics, "password_check_failures_account")).toBe(blocked + 3);
    expect(await g.db.prisma.user.count({ where: { id: userId } })).toBe(1);
    expect((await g.http.post("/api/login").send({ email, password: NEW_PASSWORD })).status).toBe(401);

    // Another account is unaffected.
    expect((await changePassword(g, bystander, STRONG_PASSWORD)).status).toBe(200);
  });

  it("changePassword and deleteAccount: counts only wrong passwords as failures, not other refusals", async () => {
    const g = await start({ RATE_LIMIT_PASSWORD_CHECK_FAILURES_PER_ACCOUNT: "2" });
    const { token } = await g.register();
    // The right old password with a new one the policy refuses: 400, three times, one after another.
    for (let i = 0; i < 3; i++) {
      const weak = await changePassword(g, token, STRONG_PASSWORD, "short");
      expect([weak.status, weak.body]).toEqual([400, { error: expect.any(String) }]);
    }
    // Both wrong guesses are still checked; the third is refused.
    expect((await changePassword(g, token, "Wrong-Password-1")).status).toBe(401);
    expect((await deleteAccount(g, token, "Wrong-Password-2")).status).toBe(401);
    expect429(await changePassword(g, token, "Wrong-Password-3"), 900);
    expect(await rateLimitBlocks(g.deps.metrics, "password_check_failures_account")).toBe(1);
  });

  it("changePassword and deleteAccount: RATE_LIMIT_PASSWORD_CHECKS_PER_ACCOUNT_PER_MINUTE requests per account, successes included", async () => {
    const g = await start({ RATE_LIMIT_PASSWORD_CHECKS_PER_ACCOUNT_PER_MINUTE: "2" });
    const { token, email } = await g.register();
    // Two successful changes (each revokes the token: log in again), then even a correct third one waits.
    expect((await changePassword(g, token, STRONG_PASSWORD, NEW_PASSWORD)).status).toBe(200);
    const second = await login(g, email, NEW_PASSWORD);
    expect((await changePassword(g, second, NEW_PASSWORD, STRONG_PASSWORD)).status).toBe(200);
    const third = await login(g, email, STRONG_PASSWORD);
    expect429(await changePassword(g, third, STRONG_PASSWORD, NEW_PASSWORD), 60);
    expect429(await deleteAccount(g, third, STRONG_PASSWORD), 60);
    expect(await rateLimitBlocks(g.deps.metrics, "password_check_account")).toBe(2);
    expect((await g.http.get("/api/checkLogin").set(bearer(third))).status).toBe(200);
  });
});
