import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import http from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createDatabase, type Database } from "@roost/db";
import { createTestDatabase, createTestRedis, freePort, waitFor, type TestDatabase, type TestRedis } from "@roost/testkit";
import { startMailerProcess, type MailerProcess } from "./support/mailer-process.js";
import { startSmtpSink, type ReceivedMail, type SmtpSink } from "../services/mailer/src/test-support/smtp-sink.js";

/**
 * Password recovery end to end: the gateway and the mailer as real processes
 * (their dist/main.js), one test database, and a real SMTP server in this
 * process that the test reads the mails from, as a user reads their inbox.
 */
const TEST_TIMEOUT_MS = 120_000;
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const gatewayMain = path.join(repo, "services/gateway/dist/main.js");
const APP_URL = "https://roost.example.com/app";
const LINK = /https:\/\/roost\.example\.com\/app\/reset-password\?token=([A-Za-z0-9_-]+)/;
const OLD_PASSWORD = "Correct-Horse-42";
const NEW_PASSWORD = "Brand-New-Secret-77";
/** Short per-e-mail window so the test can ask twice; the default (60 s) is asserted in the gateway's integration test. */
const EMAIL_WINDOW_SECONDS = 3;

describe("password recovery across gateway, outbox, mailer and SMTP", () => {
  let database: TestDatabase;
  let db: Database;
  let redis: TestRedis;
  let dataDir: string;
  let smtpPort: number;
  let smtp: SmtpSink;
  let mailer: MailerProcess;
  let gateway: ChildProcess;
  let gatewayOutput = "";
  let base: string;

  /** POST over node:http (fetch would replace a Host header with its own). */
  const api = (route: string, body: unknown, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string; body: Record<string, unknown> }>((resolve, reject) => {
      const payload = JSON.stringify(body);
      const req = http.request(
        `${base}/api/${route}`,
        { method: "POST", headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(payload), ...headers } },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (text += chunk));
          res.on("end", () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} }),
          );
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  const checkLogin = (token: string) => fetch(`${base}/api/checkLogin`, { headers: { Authorization: `Bearer ${token}` } });
  const unfinished = async () =>
    Number((await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM email_outbox WHERE status IN ('pending', 'processing')`)).rows[0]?.n);
  const mailsTo = (address: string, subject: string): ReceivedMail[] =>
    smtp.messages.filter((m) => m.to.includes(address) && m.subject === subject);

  beforeAll(async () => {
    if (!existsSync(gatewayMain)) throw new Error(`${gatewayMain} is missing: build first (node_modules/.bin/tsc -b tsconfig.json)`);
    database = await createTestDatabase();
    db = createDatabase({ databaseUrl: database.url });
    redis = createTestRedis();
    dataDir = await mkdtemp(path.join(os.tmpdir(), "roost-recovery-"));
    smtp = await startSmtpSink();
    smtpPort = smtp.port;
    const shared = {
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: redis.prefix.slice(0, -1),
      SMTP_HOST: "127.0.0.1",
      SMTP_PORT: String(smtpPort),
      MAIL_FROM_ADDRESS: "roost@example.com",
      PUBLIC_APP_URL: APP_URL,
    };
    mailer = await startMailerProcess({
      ...shared,
      SMTP_TIMEOUT_SECONDS: "2",
      MAILER_POLL_INTERVAL_SECONDS: "1",
      MAILER_RETRY_BASE_SECONDS: "1",
      MAILER_RETRY_MAX_SECONDS: "2",
    });
    const port = await freePort();
    gateway = spawn(process.execPath, [gatewayMain], {
      env: {
        PATH: process.env.PATH ?? "",
        ...shared,
        PORT: String(port),
        HOST: "127.0.0.1",
        DATA_DIR: dataDir,
        JWT_SECRET: randomBytes(32).toString("hex"),
        PASSWORD_HASH_MEMORY_KIB: "1024",
        PASSWORD_HASH_TIME_COST: "1",
        RATE_LIMIT_FORGOT_PASSWORD_EMAIL_WINDOW_SECONDS: String(EMAIL_WINDOW_SECONDS),
        // The test polls for the end of the per-e-mail window; the per-IP limit is not under test here.
        RATE_LIMIT_FORGOT_PASSWORD_PER_MINUTE: "1000",
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    gateway.stdout?.on("data", (chunk: Buffer) => (gatewayOutput += chunk.toString("utf8")));
    gateway.stderr?.on("data", (chunk: Buffer) => (gatewayOutput += chunk.toString("utf8")));
    base = `http://127.0.0.1:${port}`;
    const up = await waitFor(
      async () => {
        if (gateway.exitCode !== null || gateway.signalCode !== null) return "exited";
        return (await fetch(`${base}/api/releases`).catch(() => null))?.status === 200 ? "up" : null;
      },
      { timeoutMs: 30_000, what: "the gateway to answer" },
    );
    if (up !== "up") throw new Error(`gateway exited:\n${gatewayOutput}`);
  }, TEST_TIMEOUT_MS);

  afterAll(async () => {
    if (gateway && gateway.exitCode === null && gateway.signalCode === null) {
      const exited = new Promise((resolve) => gateway.once("exit", resolve));
      gateway.kill("SIGTERM");
      await exited;
    }
    await mailer?.stop();
    await smtp?.stop();
    await db?.close();
    await database?.drop();
    await redis?.cleanup();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("resets a password from the e-mailed link: old sessions and tokens die, the new password works, a confirmation arrives", async () => {
    const email = "alice@example.com";
    const registered = await api("register", { email, password: OLD_PASSWORD });
    expect(registered.status).toBe(201);
    const session = String(registered.body.token);

    // Headers a client controls never end up in the link.
    const spoofing = { Host: "evil.example", "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "http" };
    const first = await api("forgotPassword", { email }, spoofing);
    expect(first.status).toBe(200);
    const [firstMail] = await smtp.waitForMessages(1);
    expect(firstMail?.to).toEqual([email]);
    expect(firstMail?.text).not.toContain("evil.example");
    const firstToken = LINK.exec(firstMail?.text ?? "")?.[1];
    expect(firstToken).toBeDefined();

    // A second request inside the per-e-mail window is refused and sends nothing.
    const throttled = await api("forgotPassword", { email: "ALICE@example.com" });
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers["retry-after"])).toBeGreaterThan(0);
    await waitFor(async () => (await unfinished()) === 0, { what: "the outbox to be idle" });
    expect(mailsTo(email, "Reset your Roost password")).toHaveLength(1);

    // Once the window has passed, a new link comes: two live tokens now.
    const second = await waitFor(
      async () => {
        const res = await api("forgotPassword", { email });
        return res.status === 200 ? res : null;
      },
      { timeoutMs: (EMAIL_WINDOW_SECONDS + 5) * 1000, intervalMs: 500, what: "the per-e-mail window to pass" },
    );
    expect(second.body).toEqual(first.body);
    await waitFor(() => mailsTo(email, "Reset your Roost password").length === 2, { what: "the second reset mail" });
    const secondToken = LINK.exec(mailsTo(email, "Reset your Roost password")[1]?.text ?? "")?.[1] ?? "";
    expect(secondToken).not.toBe(firstToken);

    const reset = await api("resetPassword", { token: secondToken, newPassword: NEW_PASSWORD });
    expect(reset.status).toBe(200);
    expect(reset.body).toEqual({ message: "Password has been reset." });

    expect((await checkLogin(session)).status).toBe(401);
    for (const token of [firstToken, secondToken]) {
      const reused = await api("resetPassword", { token, newPassword: "Another-Secret-88" });
      expect(reused.status).toBe(401);
    }
    expect((await api("login", { email, password: OLD_PASSWORD })).status).toBe(401);
    const login = await api("login", { email, password: NEW_PASSWORD });
    expect(login.status).toBe(200);
    expect((await checkLogin(String(login.body.token))).status).toBe(200);

    await waitFor(() => mailsTo(email, "Your Roost password was changed").length === 1, { what: "the confirmation mail" });
    const confirmation = mailsTo(email, "Your Roost password was changed")[0];
    expect(confirmation?.text).toContain(APP_URL);
    expect(confirmation?.text).not.toMatch(/token=/);
  }, TEST_TIMEOUT_MS);

  it("gives an unknown address the same answer and mails nobody", async () => {
    const registered = await api("register", { email: "bob@example.com", password: OLD_PASSWORD });
    expect(registered.status).toBe(201);
    const bob = await api("forgotPassword", { email: "bob@example.com" });
    const unknown = await api("forgotPassword", { email: "nobody@example.com" });
    expect(bob.status).toBe(200);
    expect(unknown.status).toBe(200);
    expect(unknown.text).toBe(bob.text);
    await waitFor(() => mailsTo("bob@example.com", "Reset your Roost password").length === 1, { what: "bob's mail" });
    await waitFor(async () => (await unfinished()) === 0, { what: "the outbox to be idle" });
    expect(smtp.messages.filter((m) => m.to.includes("nobody@example.com"))).toHaveLength(0);
    const dropped = await db.pool.query(`SELECT 1 FROM email_outbox WHERE status = 'dropped' AND user_id IS NULL`);
    expect(dropped.rowCount).toBe(1);
  }, TEST_TIMEOUT_MS);

  it("answers at once while SMTP is down, and the mail is delivered once when SMTP is back", async () => {
    await smtp.stop();
    const registered = await api("register", { email: "carol@example.com", password: OLD_PASSWORD });
    expect(registered.status).toBe(201);
    const answer = await api("forgotPassword", { email: "carol@example.com" });
    expect(answer.status).toBe(200);
    // The request was answered from the committed outbox row alone: SMTP is refusing connections right now.
    const failedAttempt = await waitFor(
      async () => {
        const { rows } = await db.pool.query<{ attempts: number; last_error: string | null; status: string }>(
          `SELECT attempts, last_error, status FROM email_outbox WHERE recipient = 'carol@example.com'`,
        );
        const row = rows[0];
        return row && row.attempts >= 1 && row.last_error !== null ? row : null;
      },
      { what: "a refused SMTP attempt" },
    );
    expect(failedAttempt.status).not.toBe("sent");

    smtp = await startSmtpSink({ port: smtpPort });
    await waitFor(() => mailsTo("carol@example.com", "Reset your Roost password").length === 1, { timeoutMs: 20_000, what: "carol's mail" });
    await waitFor(async () => (await unfinished()) === 0, { what: "the outbox to be idle" });
    expect(mailsTo("carol@example.com", "Reset your Roost password")).toHaveLength(1);
  }, TEST_TIMEOUT_MS);
});
