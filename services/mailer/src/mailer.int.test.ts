import { createDatabase, type Database } from "@roost/db";
import { createLogger, createMetrics, type Metrics } from "@roost/observability";
import { enqueueEmail, hashResetToken, insertPasswordResetIntent } from "@roost/outbox";
import { createProducer, createRedisConnection, mailQueue } from "@roost/queue";
import { createTestDatabase, createTestRedis, freePort, waitFor, type TestDatabase, type TestRedis } from "@roost/testkit";
import { createMailerService, mailerConfigFromEnv, type MailerService } from "./index.js";
import { startSmtpSink, type SmtpSink } from "./test-support/smtp-sink.js";

const APP_URL = "https://roost.example.com/app";
const LINK = /https:\/\/roost\.example\.com\/app\/reset-password\?token=([A-Za-z0-9_-]+)/;

interface OutboxRow {
  id: string;
  kind: string;
  status: string;
  attempts: number;
  last_error: string | null;
  locked_by: string | null;
  sent_at: Date | null;
}

describe("mailer", () => {
  let database: TestDatabase;
  let db: Database;
  let redis: TestRedis;
  let metrics: Metrics;
  const sinks: SmtpSink[] = [];
  const mailers: MailerService[] = [];

  beforeEach(async () => {
    database = await createTestDatabase();
    db = createDatabase({ databaseUrl: database.url });
    redis = createTestRedis();
    metrics = createMetrics({ defaultMetrics: false });
  });

  afterEach(async () => {
    await Promise.all(mailers.splice(0).map((m) => m.stop()));
    await Promise.all(sinks.splice(0).map((s) => s.stop()));
    await db.close();
    await database.drop();
    await redis.cleanup();
  });

  async function sink(options: Parameters<typeof startSmtpSink>[0] = {}): Promise<SmtpSink> {
    const started = await startSmtpSink(options);
    sinks.push(started);
    return started;
  }

  function mailer(smtpPort: number, env: Record<string, string> = {}): MailerService {
    const config = mailerConfigFromEnv({
      QUEUE_PREFIX: redis.prefix.slice(0, -1),
      SMTP_HOST: "127.0.0.1",
      SMTP_PORT: String(smtpPort),
      SMTP_TIMEOUT_SECONDS: "2",
      MAIL_FROM_ADDRESS: "roost@example.com",
      PUBLIC_APP_URL: APP_URL,
      MAILER_POLL_INTERVAL_SECONDS: "1",
      MAILER_RETRY_BASE_SECONDS: "1",
      MAILER_LEASE_SECONDS: "10",
      ...env,
    });
    const service = createMailerService({ config, db, redisUrl: redis.url, logger: createLogger({ silent: true }), metrics });
    mailers.push(service);
    return service;
  }

  async function rows(): Promise<OutboxRow[]> {
    const { rows: found } = await db.pool.query<OutboxRow>(
      `SELECT id::text, kind, status, attempts, last_error, locked_by, sent_at FROM email_outbox ORDER BY id`,
    );
    return found;
  }

  async function row(id: bigint): Promise<OutboxRow> {
    const found = (await rows()).find((r) => r.id === String(id));
    if (!found) throw new Error(`no outbox row ${id}`);
    return found;
  }

  async function metricValue(name: string, labels: Record<string, string> = {}): Promise<number> {
    const metric = await metrics.registry.getSingleMetric(name)?.get();
    const value = metric?.values.find((v) => Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l));
    return value?.value ?? 0;
  }

  it("sends a reset e-mail whose link carries a fresh token that PostgreSQL keeps only as a hash", async () => {
    const smtp = await sink();
    const user = await db.prisma.user.create({ data: { email: "alice@example.com", passwordHash: "x" } });
    const id = await insertPasswordResetIntent(db.prisma, "alice@example.com");
    const service = mailer(smtp.port);
    await service.start();

    const [mail] = await smtp.waitForMessages(1);
    if (!mail) throw new Error("no mail");
    expect(mail.to).toEqual(["alice@example.com"]);
    expect(mail.from).toBe("roost@example.com");
    expect(mail.outboxId).toBe(String(id));
    expect(mail.headers["message-id"]).toContain(`roost.outbox.${id}@example.com`);
    expect(mail.subject).toBe("Reset your Roost password");

    const link = LINK.exec(mail.text);
    const token = link?.[1];
    if (!link || !token) throw new Error(`no reset link in: ${mail.text}`);
    expect(token).toHaveLength(43);
    // The token appears only inside the link, in both bodies.
    expect(mail.text.split(link[0]).join("")).not.toContain(token);
    expect(mail.html).toContain(`href="${link[0]}"`);
    expect(mail.html.split(link[0]).join("")).not.toContain(token);
    expect(mail.subject).not.toContain(token);

    await waitFor(async () => (await row(id)).status === "sent", { what: "row marked sent" });
    const tokens = await db.pool.query<{ token_hash: string; user_id: number; ttl_minutes: number }>(
      `SELECT token_hash, user_id, EXTRACT(EPOCH FROM expires_at - created_at) / 60 AS ttl_minutes FROM password_reset_tokens`,
    );
    expect(tokens.rows).toHaveLength(1);
    expect(tokens.rows[0]?.token_hash).toBe(hashResetToken(token));
    expect(tokens.rows[0]?.user_id).toBe(user.id);
    expect(Number(tokens.rows[0]?.ttl_minutes)).toBeCloseTo(30, 1);
    // The raw token rests nowhere in the database.
    const leaks = await db.pool.query(
      `SELECT 1 FROM email_outbox WHERE payload::text LIKE $1 OR coalesce(last_error, '') LIKE $1
       UNION ALL SELECT 1 FROM password_reset_tokens WHERE token_hash LIKE $1`,
      [`%${token}%`],
    );
    expect(leaks.rowCount).toBe(0);
    expect(await metricValue("svc_mailer_messages_sent_total", { kind: "password_reset" })).toBe(1);
  });

  it("honours PASSWORD_RESET_TOKEN_TTL_MINUTES and says so in the mail", async () => {
    const smtp = await sink();
    await db.prisma.user.create({ data: { email: "ttl@example.com", passwordHash: "x" } });
    await insertPasswordResetIntent(db.prisma, "ttl@example.com");
    await mailer(smtp.port, { PASSWORD_RESET_TOKEN_TTL_MINUTES: "45" }).start();
    const [mail] = await smtp.waitForMessages(1);
    expect(mail?.text).toContain("within 45 minutes");
    await waitFor(async () => (await db.prisma.passwordResetToken.count()) === 1);
    const ttl = await db.pool.query<{ minutes: string }>(`SELECT EXTRACT(EPOCH FROM expires_at - created_at) / 60 AS minutes FROM password_reset_tokens`);
    expect(Number(ttl.rows[0]?.minutes)).toBeCloseTo(45, 1);
  });

  it("drops a reset intent for an address without an account and sends nothing", async () => {
    const smtp = await sink();
    const id = await insertPasswordResetIntent(db.prisma, "nobody@example.com");
    const service = mailer(smtp.port);
    await service.start();
    await service.drain();
    await waitFor(async () => (await row(id)).status === "dropped", { what: "row dropped" });
    expect(smtp.messages).toHaveLength(0);
    expect(await db.prisma.passwordResetToken.count()).toBe(0);
    expect(await metricValue("svc_mailer_messages_dropped_total", { kind: "password_reset", reason: "no_account" })).toBe(1);
    expect(await metricValue("svc_mailer_messages_sent_total", { kind: "password_reset" })).toBe(0);
  });

  it("keeps a message while SMTP is down and delivers it exactly once when SMTP is back", async () => {
    const port = await freePort();
    const id = await enqueueEmail(db.prisma, { kind: "password_changed", recipient: "bob@example.com", userId: null });
    const service = mailer(port);
    await service.start();

    const failed = await waitFor(async () => {
      const r = await row(id);
      return r.attempts >= 1 && r.status === "pending" && r.last_error !== null ? r : null;
    }, { what: "a failed first attempt" });
    expect(failed.last_error).toMatch(/ECONNREFUSED|connect/i);
    expect(await metricValue("svc_mailer_send_errors_total", { kind: "password_changed", permanent: "false" })).toBeGreaterThanOrEqual(1);

    const smtp = await sink({ port });
    const [mail] = await smtp.waitForMessages(1);
    expect(mail?.outboxId).toBe(String(id));
    expect(mail?.subject).toBe("Your Roost password was changed");
    const sent = await waitFor(async () => {
      const r = await row(id);
      return r.status === "sent" ? r : null;
    }, { what: "row marked sent" });
    expect(sent.attempts).toBeGreaterThanOrEqual(2);
    expect(sent.last_error).toBeNull();

    // Later polls find nothing to do: the sent row is never sent again.
    await service.drain();
    await service.drain();
    expect(smtp.messages).toHaveLength(1);
  });

  it("retries with back-off up to MAILER_MAX_ATTEMPTS, then marks the message failed", async () => {
    const port = await freePort();
    const id = await enqueueEmail(db.prisma, { kind: "password_changed", recipient: "carol@example.com", userId: null });
    await mailer(port, { MAILER_MAX_ATTEMPTS: "3" }).start();
    const failed = await waitFor(async () => {
      const r = await row(id);
      return r.status === "failed" ? r : null;
    }, { timeoutMs: 20_000, what: "row marked failed" });
    expect(failed.attempts).toBe(3);
    expect(await metricValue("svc_mailer_messages_failed_total", { kind: "password_changed" })).toBe(1);
    expect(await metricValue("svc_mailer_send_errors_total", { kind: "password_changed", permanent: "false" })).toBe(3);
  });

  it("fails at once when the server refuses the recipient for good (5xx)", async () => {
    const smtp = await sink({ rejectRecipients: ["bounce@example.com"] });
    const bad = await enqueueEmail(db.prisma, { kind: "password_changed", recipient: "bounce@example.com", userId: null });
    const good = await enqueueEmail(db.prisma, { kind: "password_changed", recipient: "fine@example.com", userId: null });
    await mailer(smtp.port).start();
    await waitFor(async () => (await row(bad)).status === "failed" && (await row(good)).status === "sent", { what: "both rows finished" });
    expect((await row(bad)).attempts).toBe(1);
    expect((await row(bad)).last_error).toMatch(/550|unavailable/i);
    expect(smtp.messages.map((m) => m.outboxId)).toEqual([String(good)]);
  });

  it("recovers a row stuck in processing after its mailer died, leaves live leases alone, never re-sends a sent row", async () => {
    const smtp = await sink();
    const insert = async (status: string, lockedUntil: string, lockedBy: string | null) => {
      const { rows: inserted } = await db.pool.query<{ id: string }>(
        `INSERT INTO email_outbox (kind, recipient, status, attempts, locked_by, locked_until, sent_at)
         VALUES ('password_changed', 'dora@example.com', $1, 1, $2, now() + $3::interval, CASE WHEN $1 = 'sent' THEN now() END)
         RETURNING id::text`,
        [status, lockedBy, lockedUntil],
      );
      return inserted[0]?.id ?? "";
    };
    const stuck = await insert("processing", "-5 seconds", "crashed-mailer");
    const held = await insert("processing", "1 hour", "live-mailer");
    const alreadySent = await insert("sent", "0 seconds", "old-mailer");

    const service = mailer(smtp.port);
    await service.start();
    await smtp.waitForMessages(1);
    await waitFor(async () => (await rows()).find((r) => r.id === stuck)?.status === "sent", { what: "stuck row sent" });
    await service.drain();
    expect(smtp.messages.map((m) => m.outboxId)).toEqual([stuck]);
    const after = await rows();
    expect(after.find((r) => r.id === stuck)).toMatchObject({ status: "sent", attempts: 2, locked_by: service.workerId });
    expect(after.find((r) => r.id === held)).toMatchObject({ status: "processing", attempts: 1, locked_by: "live-mailer" });
    expect(after.find((r) => r.id === alreadySent)).toMatchObject({ status: "sent", attempts: 1, locked_by: "old-mailer" });
  });

  it("deletes finished rows older than MAILER_RETENTION_DAYS and keeps everything else", async () => {
    const smtp = await sink();
    await db.pool.query(
      `INSERT INTO email_outbox (kind, recipient, status, created_at, next_attempt_at) VALUES
         ('password_changed', 'old-sent@example.com', 'sent', now() - interval '10 days', now()),
         ('password_changed', 'old-dropped@example.com', 'dropped', now() - interval '10 days', now()),
         ('password_changed', 'old-failed@example.com', 'failed', now() - interval '10 days', now()),
         ('password_changed', 'new-sent@example.com', 'sent', now() - interval '1 day', now()),
         ('password_changed', 'old-pending@example.com', 'pending', now() - interval '10 days', now() + interval '1 hour')`,
    );
    await mailer(smtp.port, { MAILER_RETENTION_DAYS: "7" }).start();
    await waitFor(async () => (await db.prisma.emailOutbox.count()) === 2, { what: "old finished rows deleted" });
    const left = await db.prisma.emailOutbox.findMany({ orderBy: { id: "asc" }, select: { recipient: true, status: true } });
    expect(left).toEqual([
      { recipient: "new-sent@example.com", status: "sent" },
      { recipient: "old-pending@example.com", status: "pending" },
    ]);
  });

  it("reports pending count and the oldest pending age", async () => {
    const smtp = await sink();
    await db.pool.query(
      `INSERT INTO email_outbox (kind, recipient, created_at, next_attempt_at) VALUES
         ('password_changed', 'later@example.com', now() - interval '120 seconds', now() + interval '1 hour'),
         ('password_changed', 'later2@example.com', now() - interval '5 seconds', now() + interval '1 hour')`,
    );
    const service = mailer(smtp.port);
    await service.start();
    await service.drain();
    expect(await metricValue("svc_mailer_outbox_pending")).toBe(2);
    expect(await metricValue("svc_mailer_outbox_oldest_pending_age_seconds")).toBeGreaterThanOrEqual(120);
    const text = await metrics.registry.metrics();
    for (const family of [
      "svc_mailer_messages_sent_total",
      "svc_mailer_messages_failed_total",
      "svc_mailer_outbox_pending",
      "svc_mailer_outbox_oldest_pending_age_seconds",
    ]) {
      expect(text).toContain(`# TYPE ${family}`);
    }
  });

  it("drains at once on a wake-up from the mail queue, long before the next poll", async () => {
    const smtp = await sink();
    const service = mailer(smtp.port, { MAILER_POLL_INTERVAL_SECONDS: "3600" });
    await service.start();
    await service.drain();
    const id = await enqueueEmail(db.prisma, { kind: "password_changed", recipient: "erin@example.com", userId: null });
    const connection = createRedisConnection(redis.url, "producer");
    const producer = createProducer(mailQueue, { connection, prefix: redis.prefix.slice(0, -1) });
    try {
      await waitFor(() => connection.status === "ready", { what: "producer connection" });
      await producer.enqueue("wake", { outboxId: String(id) });
      const [mail] = await smtp.waitForMessages(1, 15_000);
      expect(mail?.outboxId).toBe(String(id));
    } finally {
      await producer.close();
      connection.disconnect();
    }
  });

  it("stays idle when recovery e-mail is not configured", async () => {
    const config = mailerConfigFromEnv({ QUEUE_PREFIX: redis.prefix.slice(0, -1) });
    expect(config.smtp).toBeNull();
    await enqueueEmail(db.prisma, { kind: "password_changed", recipient: "frank@example.com", userId: null });
    const service = createMailerService({ config, db, redisUrl: redis.url, logger: createLogger({ silent: true }), metrics });
    mailers.push(service);
    await service.start();
    await service.drain();
    expect((await rows())[0]).toMatchObject({ status: "pending", attempts: 0 });
  });
});
