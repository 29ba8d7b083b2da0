import { createDatabase, type Database } from "@roost/db";
import { hashResetToken } from "@roost/outbox";
import { createTestDatabase, createTestRedis, waitFor, type TestDatabase, type TestRedis } from "@roost/testkit";
import { startMailerProcess, type MailerProcess } from "./support/mailer-process.js";
import { startSmtpSink, type ReceivedMail, type SmtpSink } from "../services/mailer/src/test-support/smtp-sink.js";

/**
 * Real mailer processes (services/mailer/dist/main.js) against one test
 * database and a real SMTP server in this process. Every message carries its
 * outbox row id in X-Roost-Outbox-Id, so "delivered exactly once" is counted
 * per row from what the SMTP server accepted.
 */
const TEST_TIMEOUT_MS = 120_000;

const LINK = /https:\/\/roost\.example\.com\/reset-password\?token=([A-Za-z0-9_-]+)/;

interface Row {
  id: string;
  status: string;
  attempts: number;
  locked_by: string | null;
}

describe("mailer processes", () => {
  let database: TestDatabase;
  let db: Database;
  let redis: TestRedis;
  let smtp: SmtpSink | undefined;
  const processes: MailerProcess[] = [];

  beforeEach(async () => {
    database = await createTestDatabase();
    db = createDatabase({ databaseUrl: database.url });
    redis = createTestRedis();
  });

  afterEach(async () => {
    await Promise.all(processes.splice(0).map((p) => p.kill()));
    await smtp?.stop();
    await db.close();
    await database.drop();
    await redis.cleanup();
  });

  function env(port: number, extra: Record<string, string> = {}): Record<string, string> {
    return {
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: redis.prefix.slice(0, -1),
      SMTP_HOST: "127.0.0.1",
      SMTP_PORT: String(port),
      SMTP_TIMEOUT_SECONDS: "2",
      MAIL_FROM_ADDRESS: "roost@example.com",
      PUBLIC_APP_URL: "https://roost.example.com",
      MAILER_POLL_INTERVAL_SECONDS: "1",
      MAILER_LEASE_SECONDS: "7",
      ...extra,
    };
  }

  async function start(port: number, extra: Record<string, string> = {}): Promise<MailerProcess> {
    const started = await startMailerProcess(env(port, extra));
    processes.push(started);
    return started;
  }

  async function rows(): Promise<Row[]> {
    const { rows: found } = await db.pool.query<Row>(`SELECT id::text, status, attempts, locked_by FROM email_outbox ORDER BY id`);
    return found;
  }

  /** Outbox id → how many times the SMTP server accepted it. */
  function deliveries(messages: readonly ReceivedMail[]): Map<string, number> {
    const counts = new Map<string, number>();
    for (const m of messages) counts.set(m.outboxId, (counts.get(m.outboxId) ?? 0) + 1);
    return counts;
  }

  it("two mailer processes drain 200 queued messages without sending any twice", async () => {
    smtp = await startSmtpSink();
    const port = smtp.port;
    // Both are up and polling before the work arrives, so both take part.
    const [a, b] = await Promise.all([start(port, { MAILER_BATCH_SIZE: "5" }), start(port, { MAILER_BATCH_SIZE: "5" })]);
    await db.pool.query(
      `INSERT INTO users (email, password_hash) SELECT 'user' || g || '@example.com', 'x' FROM generate_series(1, 100) g`,
    );
    await db.pool.query(
      `INSERT INTO email_outbox (kind, recipient, user_id)
       SELECT 'password_reset', email, id FROM users
       UNION ALL
       SELECT 'password_changed', 'changed' || g || '@example.com', NULL FROM generate_series(1, 100) g`,
    );

    await waitFor(async () => (await rows()).every((r) => r.status === "sent"), { timeoutMs: 90_000, what: "all 200 rows sent" });
    // Graceful stops let any send still in flight finish before counting.
    await Promise.all([a.stop(), b.stop()]);

    const all = await rows();
    expect(all).toHaveLength(200);
    const counts = deliveries(smtp.messages);
    expect(smtp.messages).toHaveLength(200);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect([...counts.keys()].sort()).toEqual(all.map((r) => r.id).sort());
    // Both processes sent part of the batch.
    const byWorker = new Map<string, number>();
    for (const r of all) byWorker.set(r.locked_by ?? "", (byWorker.get(r.locked_by ?? "") ?? 0) + 1);
    expect([...byWorker.keys()].sort()).toEqual([a.workerId, b.workerId].sort());
    expect(Math.min(...byWorker.values())).toBeGreaterThan(0);

    // Every reset mail's link token is one stored hash, one per user.
    const resets = smtp.messages.filter((m) => m.subject === "Reset your Roost password");
    expect(resets).toHaveLength(100);
    const hashes = resets.map((m) => hashResetToken(LINK.exec(m.text)?.[1] ?? ""));
    const stored = await db.pool.query<{ token_hash: string }>(`SELECT token_hash FROM password_reset_tokens`);
    expect(stored.rows.map((r) => r.token_hash).sort()).toEqual([...hashes].sort());
    expect(new Set(hashes).size).toBe(100);
  }, TEST_TIMEOUT_MS);

  it("a mailer killed with SIGKILL mid-batch loses nothing: another one delivers the rest, each message once", async () => {
    let signalHeld: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (signalHeld = resolve));
    let release: (error: Error) => void = () => undefined;
    let holding = false;
    smtp = await startSmtpSink({
      // The 6th message is held in DATA (no 250 yet) while the test kills its sender.
      beforeAccept: (mail) => {
        if (holding || smtp?.messages.length !== 5 || mail.outboxId === "") return;
        holding = true;
        signalHeld();
        return new Promise<void>((_resolve, reject) => (release = reject));
      },
    });
    await db.pool.query(
      `INSERT INTO email_outbox (kind, recipient) SELECT 'password_changed', 'victim' || g || '@example.com' FROM generate_series(1, 30) g`,
    );
    // One message at a time, 20 claimed per batch: the kill lands after 5 sent, 1 in flight, 14 claimed but not started.
    const victim = await start(smtp.port, { MAILER_CONCURRENCY: "1", MAILER_BATCH_SIZE: "20" });
    await held;
    expect(await victim.kill()).toBe("SIGKILL");
    release(new Error("sender went away"));

    const afterCrash = await rows();
    expect(afterCrash.filter((r) => r.status === "sent")).toHaveLength(5);
    const orphaned = afterCrash.filter((r) => r.status === "processing");
    expect(orphaned).toHaveLength(15);
    expect(orphaned.every((r) => r.locked_by === victim.workerId)).toBe(true);
    expect(smtp.messages).toHaveLength(5);

    const rescuer = await start(smtp.port, { MAILER_BATCH_SIZE: "20" });
    await waitFor(async () => (await rows()).every((r) => r.status === "sent"), { timeoutMs: 60_000, what: "all 30 rows sent" });
    await rescuer.stop();

    const all = await rows();
    const counts = deliveries(smtp.messages);
    expect(smtp.messages).toHaveLength(30);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect([...counts.keys()].sort()).toEqual(all.map((r) => r.id).sort());
    // The rows the dead mailer had claimed were recovered after its lease ran out.
    const orphanIds = new Set(orphaned.map((r) => r.id));
    for (const r of all.filter((row) => orphanIds.has(row.id))) {
      expect(r).toMatchObject({ status: "sent", attempts: 2, locked_by: rescuer.workerId });
    }
  }, TEST_TIMEOUT_MS);
});
