import type { DbHandle } from "@roost/db";
import type { OutboxKind } from "./outbox-messages.js";

/**
 * The e-mail outbox table (`email_outbox`). Writers insert rows inside their
 * own transaction; mailers claim them with FOR UPDATE SKIP LOCKED under a
 * lease, so any number of mailer processes can drain the same table and a
 * crashed mailer's rows become claimable again when its lease runs out.
 * Every state change after the claim is conditional on still holding the
 * lease (`status = 'processing' AND locked_by = worker`), and a claim never
 * selects a `sent` row: once marked sent, a message is never sent again.
 * All times come from PostgreSQL's clock, so mailers on hosts with skewed
 * clocks agree on leases and back-off.
 */

export interface ClaimedMessage {
  id: bigint;
  kind: string;
  recipient: string;
  userId: number | null;
  payload: unknown;
  /** Attempts including this one (the claim counts it). */
  attempts: number;
  createdAt: Date;
}

export interface OutboxStats {
  /** Rows not finished yet (pending or processing). */
  pending: number;
  /** Seconds since the oldest unfinished row was written; 0 when there is none. */
  oldestPendingAgeSeconds: number;
}

/**
 * Inserts a password-reset intent for a normalised e-mail. It is one
 * statement whatever the address: the users lookup is a LEFT JOIN inside the
 * INSERT, so an unknown address yields a row with user_id NULL (and an empty
 * recipient, so no address without an account is kept) that the mailer drops
 * unsent. The caller learns only the row id, never whether an account exists.
 */
export async function insertPasswordResetIntent(db: DbHandle, email: string): Promise<bigint> {
  const rows = await db.$queryRaw<{ id: bigint }[]>`
    INSERT INTO email_outbox (kind, recipient, user_id)
    SELECT 'password_reset', COALESCE(u.email, ''), u.id
    FROM (SELECT ${email}::text AS email) AS requested
    LEFT JOIN users u ON u.email = requested.email
    RETURNING id`;
  const row = rows[0];
  if (!row) throw new Error("email_outbox insert returned no row");
  return row.id;
}

/** Queues one e-mail; run it inside the transaction of the change it reports. */
export async function enqueueEmail(
  db: DbHandle,
  message: { kind: OutboxKind; recipient: string; userId: number | null; payload?: Record<string, unknown> },
): Promise<bigint> {
  const payload = JSON.stringify(message.payload ?? {});
  const rows = await db.$queryRaw<{ id: bigint }[]>`
    INSERT INTO email_outbox (kind, recipient, user_id, payload)
    VALUES (${message.kind}, ${message.recipient}, ${message.userId}, ${payload}::jsonb)
    RETURNING id`;
  const row = rows[0];
  if (!row) throw new Error("email_outbox insert returned no row");
  return row.id;
}

/**
 * Claims up to `limit` due rows for `workerId`: pending rows whose
 * next_attempt_at has come, and processing rows whose lease expired (their
 * mailer crashed or hung). Rows locked by a concurrent claim are skipped, not
 * waited for, so two mailers never claim the same row.
 */
export async function claimDueMessages(
  db: DbHandle,
  options: { workerId: string; limit: number; leaseSeconds: number },
): Promise<ClaimedMessage[]> {
  const rows = await db.$queryRaw<ClaimedMessage[]>`
    WITH picked AS (
      SELECT id FROM email_outbox
      WHERE (status = 'pending' AND next_attempt_at <= now())
         OR (status = 'processing' AND locked_until < now())
      ORDER BY next_attempt_at, id
      LIMIT ${options.limit}
      FOR UPDATE SKIP LOCKED
    )
    UPDATE email_outbox o
    SET status = 'processing',
        locked_by = ${options.workerId},
        locked_until = now() + make_interval(secs => ${options.leaseSeconds}),
        attempts = o.attempts + 1
    FROM picked
    WHERE o.id = picked.id
    RETURNING o.id, o.kind, o.recipient, o.user_id AS "userId", o.payload, o.attempts, o.created_at AS "createdAt"`;
  return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Extends the lease on one claimed row right before it is sent; false when
 * the lease was lost (another mailer re-claimed the row), and the caller must
 * then not send it.
 */
export async function renewLease(db: DbHandle, id: bigint, workerId: string, leaseSeconds: number): Promise<boolean> {
  const count = await db.$executeRaw`
    UPDATE email_outbox SET locked_until = now() + make_interval(secs => ${leaseSeconds})
    WHERE id = ${id} AND status = 'processing' AND locked_by = ${workerId}`;
  return count === 1;
}

/** Marks a row sent; false when the lease had been lost (logged by the caller as a possible duplicate). */
export async function markSent(db: DbHandle, id: bigint, workerId: string): Promise<boolean> {
  const count = await db.$executeRaw`
    UPDATE email_outbox SET status = 'sent', sent_at = now(), locked_until = NULL, last_error = NULL
    WHERE id = ${id} AND status = 'processing' AND locked_by = ${workerId}`;
  return count === 1;
}

/** Finishes a row without sending it (no account, account gone, address changed). */
export async function markDropped(db: DbHandle, id: bigint, workerId: string, reason: string): Promise<boolean> {
  const count = await db.$executeRaw`
    UPDATE email_outbox SET status = 'dropped', locked_until = NULL, last_error = ${reason}
    WHERE id = ${id} AND status = 'processing' AND locked_by = ${workerId}`;
  return count === 1;
}

/** Puts a row back to pending, due again after `delaySeconds`. */
export async function markRetry(
  db: DbHandle,
  id: bigint,
  workerId: string,
  delaySeconds: number,
  error: string,
): Promise<boolean> {
  const count = await db.$executeRaw`
    UPDATE email_outbox
    SET status = 'pending', next_attempt_at = now() + make_interval(secs => ${delaySeconds}),
        locked_until = NULL, last_error = ${error}
    WHERE id = ${id} AND status = 'processing' AND locked_by = ${workerId}`;
  return count === 1;
}

/** Gives up on a row: permanent SMTP rejection, or out of attempts. */
export async function markFailed(db: DbHandle, id: bigint, workerId: string, error: string): Promise<boolean> {
  const count = await db.$executeRaw`
    UPDATE email_outbox SET status = 'failed', locked_until = NULL, last_error = ${error}
    WHERE id = ${id} AND status = 'processing' AND locked_by = ${workerId}`;
  return count === 1;
}

/** Hands claimed rows that were never started back (a stopping mailer), uncounted, so another mailer takes them at once. */
export async function releaseClaims(db: DbHandle, ids: readonly bigint[], workerId: string): Promise<number> {
  if (ids.length === 0) return 0;
  return db.$executeRaw`
    UPDATE email_outbox SET status = 'pending', locked_until = NULL, attempts = GREATEST(attempts - 1, 0)
    WHERE id = ANY(${ids.map(String)}::bigint[]) AND status = 'processing' AND locked_by = ${workerId}`;
}

export async function outboxStats(db: DbHandle): Promise<OutboxStats> {
  const rows = await db.$queryRaw<{ pending: number; oldest: number }[]>`
    SELECT count(*)::int AS pending,
           COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 AS oldest
    FROM email_outbox WHERE status IN ('pending', 'processing')`;
  const row = rows[0];
  return { pending: row?.pending ?? 0, oldestPendingAgeSeconds: Math.max(0, row?.oldest ?? 0) };
}

/**
 * Deletes finished rows (sent, dropped, failed) written more than
 * `retentionDays` ago, `batchSize` at a time so no statement holds many
 * locks. Returns how many rows went.
 */
export async function deleteFinishedMessages(db: DbHandle, retentionDays: number, batchSize = 1000): Promise<number> {
  let total = 0;
  for (;;) {
    const count = await db.$executeRaw`
      DELETE FROM email_outbox WHERE id IN (
        SELECT id FROM email_outbox
        WHERE status IN ('sent', 'dropped', 'failed') AND created_at < now() - make_interval(days => ${retentionDays})
        LIMIT ${batchSize}
      )`;
    total += count;
    if (count < batchSize) return total;
  }
}
