import express from "express";
import type { PoolClient } from "pg";
import request from "supertest";
import { createDatabase, type Database } from "@roost/db";
import { createResetToken, storeResetToken } from "@roost/outbox";
import { errorHandler } from "../../http/error-handler.js";
import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { passwordRecoveryRouter } from "./password-recovery.router.js";
import { FORGOT_PASSWORD_MESSAGE, INVALID_RESET_TOKEN, RECOVERY_NOT_CONFIGURED, RECOVERY_UNAVAILABLE } from "./password-recovery.service.js";

const RECOVERY_ENV = {
  SMTP_HOST: "127.0.0.1",
  MAIL_FROM_ADDRESS: "roost@example.com",
  PUBLIC_APP_URL: "https://roost.example.com",
};
const NEW_PASSWORD = "Brand-New-Secret-77";

interface OutboxRow {
  id: string;
  kind: string;
  recipient: string;
  user_id: number | null;
  status: string;
}

async function outbox(h: GatewayHarness): Promise<OutboxRow[]> {
  const { rows } = await h.db.pool.query<OutboxRow>(`SELECT id::text, kind, recipient, user_id, status FROM email_outbox ORDER BY id`);
  return rows;
}

/** Wake-up jobs waiting on the harness's `mail` queue (no mailer consumes them here). */
async function wakeJobs(h: GatewayHarness): Promise<string[]> {
  const jobs = await h.deps.queues.mail.queue.getJobs(["waiting", "delayed", "active", "completed"]);
  return jobs.map((job) => String((job.data as { outboxId?: unknown }).outboxId)).sort();
}

/** Headers that differ between any two responses whatever the route does. */
const VOLATILE = new Set(["date", "x-request-id", "etag", "ratelimit", "ratelimit-policy"]);
const stableHeaders = (headers: Record<string, string>) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !VOLATILE.has(name.toLowerCase())));

describe("password recovery: forgotPassword", () => {
  let h: GatewayHarness;
  afterEach(async () => {
    await h?.close();
  });

  it("answers 503 when recovery is not configured, for known and unknown addresses alike, and stores nothing", async () => {
    h = await startGatewayHarness();
    const { email } = await h.register();
    const known = await h.http.post("/api/forgotPassword").send({ email });
    const unknown = await h.http.post("/api/forgotPassword").send({ email: "nobody@example.com" });
    for (const res of [known, unknown]) {
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: RECOVERY_NOT_CONFIGURED });
    }
    expect(await outbox(h)).toEqual([]);
  });

  it("gives known and unknown addresses the same 200 and queues an intent row for each, holding no token", async () => {
    h = await startGatewayHarness(RECOVERY_ENV);
    const { email } = await h.register("Alice@Example.com");
    const known = await h.http.post("/api/forgotPassword").send({ email: "  ALICE@example.com " });
    const unknown = await h.http.post("/api/forgotPassword").send({ email: "nobody@example.com" });
    expect(known.status).toBe(200);
    expect(known.body).toEqual({ message: FORGOT_PASSWORD_MESSAGE });
    expect(unknown.status).toBe(known.status);
    expect(unknown.text).toBe(known.text);
    expect(stableHeaders(unknown.headers)).toEqual(stableHeaders(known.headers));

    const rows = await outbox(h);
    const user = await h.db.prisma.user.findUniqueOrThrow({ where: { email: email.toLowerCase() } });
    expect(rows).toEqual([
      { id: expect.any(String), kind: "password_reset", recipient: "alice@example.com", user_id: user.id, status: "pending" },
      // No address without an account is kept; the mailer drops the row unsent.
      { id: expect.any(String), kind: "password_reset", recipient: "", user_id: null, status: "pending" },
    ]);
    // The gateway never creates a reset token: the mailer mints it when it sends.
    expect(await h.db.prisma.passwordResetToken.count()).toBe(0);
    const payloads = await h.db.pool.query(`SELECT payload FROM email_outbox`);
    expect(payloads.rows.map((r: { payload: unknown }) => r.payload)).toEqual([{}, {}]);
    // Both requests woke the mailer the same way.
    await expect(wakeJobs(h)).resolves.toEqual(rows.map((r) => r.id).sort());
  });

  it("runs the same SQL statements for a known and an unknown address up to the response", async () => {
    h = await startGatewayHarness(RECOVERY_ENV);
    const { email } = await h.register();
    const other = await h.register();
    // The router under test gets its own pool whose every connection records
    // the SQL text it is asked to run (what PostgreSQL receives).
    const recording: Database = createDatabase({ databaseUrl: h.database.url });
    let statements: string[] = [];
    recording.pool.on("connect", (client: PoolClient) => {
      const original = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as { query: unknown }).query = (...args: unknown[]) => {
        const first = args[0];
        statements.push(typeof first === "string" ? first : String((first as { text?: unknown }).text));
        return original(...args);
      };
    });
    const app = express()
      .use(express.json())
      .use("/api", passwordRecoveryRouter({ ...h.deps, db: recording }))
      .use(errorHandler(h.deps.logger));
    try {
      const run = async (address: string, status = 200) => {
        statements = [];
        const res = await request(app).post("/api/forgotPassword").send({ email: address });
        expect(res.status).toBe(status);
        return { statements: [...statements], body: res.text };
      };
      const known = await run(email);
      const unknown = await run("nobody@example.com");
      const otherKnown = await run(other.email);

      expect(known.statements.map((sql) => sql.trim().split(/\s+/)[0])).toEqual(["BEGIN", "SELECT", "INSERT", "COMMIT"]);
      expect(unknown.statements).toEqual(known.statements);
      expect(otherKnown.statements).toEqual(known.statements);
      expect(unknown.body).toBe(known.body);
      // The only statement that reads users is the outbox INSERT itself.
      const touchingUsers = known.statements.filter((sql) => /\busers\b/.test(sql));
      expect(touchingUsers).toHaveLength(1);
      expect(touchingUsers[0]).toMatch(/INSERT INTO email_outbox[\s\S]*LEFT JOIN users/);
      expect((await outbox(h)).map((r) => r.user_id === null)).toEqual([false, true, false]);
      // Negative control: the recorder does see a path that differs (a refused address runs no statement).
      expect((await run("not-an-address", 400)).statements).toEqual([]);
    } finally {
      await recording.close();
    }
  });

  it("throttles one address to 1 request per window, 429 with Retry-After whether or not it has an account", async () => {
    h = await startGatewayHarness(RECOVERY_ENV);
    const { email } = await h.register();
    for (const address of [email, "nobody@example.com"]) {
      const first = await h.http.post("/api/forgotPassword").send({ email: address });
      expect(first.status).toBe(200);
      const second = await h.http.post("/api/forgotPassword").send({ email: ` ${address.toUpperCase()}` });
      expect(second.status).toBe(429);
      expect(second.body).toEqual({ error: expect.any(String) });
      expect(Number(second.headers["retry-after"])).toBeGreaterThan(0);
      expect(Number(second.headers["retry-after"])).toBeLessThanOrEqual(60);
    }
    // The throttled requests stored nothing: one intent per address.
    expect((await outbox(h)).length).toBe(2);
  });

  it("limits requests per IP across addresses", async () => {
    h = await startGatewayHarness({ ...RECOVERY_ENV, RATE_LIMIT_FORGOT_PASSWORD_PER_MINUTE: "2" });
    expect((await h.http.post("/api/forgotPassword").send({ email: "a@example.com" })).status).toBe(200);
    expect((await h.http.post("/api/forgotPassword").send({ email: "b@example.com" })).status).toBe(200);
    const third = await h.http.post("/api/forgotPassword").send({ email: "c@example.com" });
    expect(third.status).toBe(429);
    expect(third.headers["retry-after"]).toBeDefined();
    expect((await outbox(h)).length).toBe(2);
  });

  it("answers 503 when the outbox cannot take the row (table locked past the lock timeout), then recovers", async () => {
    h = await startGatewayHarness({ ...RECOVERY_ENV, OUTBOX_WRITE_TIMEOUT_MS: "300" });
    const { email } = await h.register();
    const locker = await h.db.pool.connect();
    try {
      await locker.query("BEGIN");
      await locker.query("LOCK TABLE email_outbox IN ACCESS EXCLUSIVE MODE");
      const known = await h.http.post("/api/forgotPassword").send({ email });
      const unknown = await h.http.post("/api/forgotPassword").send({ email: "nobody@example.com" });
      for (const res of [known, unknown]) {
        expect(res.status).toBe(503);
        expect(res.body).toEqual({ error: RECOVERY_UNAVAILABLE });
      }
      await locker.query("COMMIT");
    } finally {
      locker.release();
    }
    expect(await outbox(h)).toEqual([]);
    const after = await h.http.post("/api/forgotPassword").send({ email: "someone-else@example.com" });
    expect(after.status).toBe(200);
    expect((await outbox(h)).length).toBe(1);
  });

  it("refuses a malformed body with 400", async () => {
    h = await startGatewayHarness(RECOVERY_ENV);
    for (const body of [{}, { email: 42 }, { email: "not-an-address" }]) {
      const res = await h.http.post("/api/forgotPassword").send(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
  });
});

describe("password recovery: resetPassword", () => {
  let h: GatewayHarness;
  afterEach(async () => {
    await h?.close();
  });

  async function tokenFor(userId: number, ttlMinutes = 30): Promise<string> {
    const { token, tokenHash } = createResetToken();
    await storeResetToken(h.db.prisma, { userId, tokenHash, ttlMinutes });
    return token;
  }

  async function userOf(email: string) {
    return h.db.prisma.user.findUniqueOrThrow({ where: { email } });
  }

  it("resets the password, removes every reset token of the user, revokes sessions and queues a confirmation", async () => {
    h = await startGatewayHarness(RECOVERY_ENV);
    const { email, token: session } = await h.register();
    const user = await userOf(email);
    const token = await tokenFor(user.id);
    const otherToken = await tokenFor(user.id);

    const weak = await h.http.post("/api/resetPassword").send({ token, newPassword: "short" });
    expect(weak.status).toBe(400);
    expect(weak.body).toEqual({ error: expect.any(String) });
    expect(await h.db.prisma.passwordResetToken.count()).toBe(2);

    const ok = await h.http.post("/api/resetPassword").send({ token, newPassword: NEW_PASSWORD });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ message: "Password has been reset." });

    expect((await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${session}`)).status).toBe(401);
    expect((await h.http.post("/api/login").send({ email, password: STRONG_PASSWORD })).status).toBe(401);
    expect((await h.http.post("/api/login").send({ email, password: NEW_PASSWORD })).status).toBe(200);
    for (const used of [token, otherToken]) {
      const again = await h.http.post("/api/resetPassword").send({ token: used, newPassword: "Another-Secret-88" });
      expect(again.status).toBe(401);
      expect(again.body).toEqual({ error: INVALID_RESET_TOKEN });
    }
    expect(await h.db.prisma.passwordResetToken.count()).toBe(0);
    const rows = await outbox(h);
    expect(rows).toEqual([{ id: expect.any(String), kind: "password_changed", recipient: email, user_id: user.id, status: "pending" }]);
    await expect(wakeJobs(h)).resolves.toEqual([rows[0]?.id]);
  });

  it("answers 401 for unknown, expired and used tokens and 400 for a malformed body", async () => {
    h = await startGatewayHarness(RECOVERY_ENV);
    const { email } = await h.register();
    const user = await userOf(email);
    const expired = await tokenFor(user.id);
    await h.db.pool.query(`UPDATE password_reset_tokens SET expires_at = now() - interval '1 second'`);
    const used = await tokenFor(user.id);
    await h.db.pool.query(`UPDATE password_reset_tokens SET used_at = now() WHERE expires_at > now()`);
    for (const token of [expired, used, "not-a-token", createResetToken().token]) {
      const res = await h.http.post("/api/resetPassword").send({ token, newPassword: NEW_PASSWORD });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: INVALID_RESET_TOKEN });
    }
    for (const body of [{}, { token: "x" }, { newPassword: NEW_PASSWORD }, { token: 5, newPassword: NEW_PASSWORD }]) {
      expect((await h.http.post("/api/resetPassword").send(body)).status).toBe(400);
    }
    expect((await h.http.post("/api/login").send({ email, password: STRONG_PASSWORD })).status).toBe(200);
  });

  it("lets exactly one of many concurrent requests use a token", async () => {
    h = await startGatewayHarness({ ...RECOVERY_ENV, RATE_LIMIT_RESET_PASSWORD_PER_ACCOUNT_PER_MINUTE: "100" });
    const { email } = await h.register();
    const token = await tokenFor((await userOf(email)).id);
    const passwords = Array.from({ length: 8 }, (_, i) => `Racing-Password-${i}0`);
    const results = await Promise.all(passwords.map((newPassword) => h.http.post("/api/resetPassword").send({ token, newPassword })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 401, 401, 401, 401, 401, 401, 401]);
    const winner = passwords[results.findIndex((r) => r.status === 200)];
    expect((await h.http.post("/api/login").send({ email, password: winner })).status).toBe(200);
    expect((await outbox(h)).filter((r) => r.kind === "password_changed")).toHaveLength(1);
  });

  it("limits requests per IP, and per account for valid tokens", async () => {
    h = await startGatewayHarness({
      ...RECOVERY_ENV,
      RATE_LIMIT_RESET_PASSWORD_PER_MINUTE: "6",
      RATE_LIMIT_RESET_PASSWORD_PER_ACCOUNT_PER_MINUTE: "2",
    });
    const first = await h.register();
    const second = await h.register();
    const firstToken = await tokenFor((await userOf(first.email)).id);
    const secondToken = await tokenFor((await userOf(second.email)).id);

    expect((await h.http.post("/api/resetPassword").send({ token: firstToken, newPassword: "weak" })).status).toBe(400);
    expect((await h.http.post("/api/resetPassword").send({ token: firstToken, newPassword: "weak" })).status).toBe(400);
    const blocked = await h.http.post("/api/resetPassword").send({ token: firstToken, newPassword: NEW_PASSWORD });
    expect(blocked.status).toBe(429);
    expect(blocked.headers["retry-after"]).toBeDefined();
    // Another account is not affected by the first one's limit.
    expect((await h.http.post("/api/resetPassword").send({ token: secondToken, newPassword: NEW_PASSWORD })).status).toBe(200);
    // Invalid tokens still count per IP: 4 requests so far, the 5th and 6th pass, the 7th is refused.
    for (let i = 0; i < 2; i++) {
      expect((await h.http.post("/api/resetPassword").send({ token: "nope", newPassword: NEW_PASSWORD })).status).toBe(401);
    }
    const overIp = await h.http.post("/api/resetPassword").send({ token: "nope", newPassword: NEW_PASSWORD });
    expect(overIp.status).toBe(429);
  });
});
