import type pg from "pg";

/** Due proxies claimed for one check job: one user's, oldest due first. */
export interface ClaimedBatch {
  userId: number;
  proxyIds: number[];
}

export interface ClaimOptions {
  /** Most users served by this claim: each gets at most one batch. */
  users: number;
  /** Most proxies in one user's batch. */
  batchSize: number;
  /** How far `next_check_at` moves while the batch is out; a batch lost with its job is claimed again after it. */
  leaseMs: number;
}

/**
 * Claims one batch for each of the `users` users whose oldest due proxy is
 * oldest, so one user's million due proxies delay another's ten by at most
 * one batch per claim. Claimed rows move to now + lease (SKIP LOCKED: a
 * concurrent claim takes other rows); deleted accounts have no users row.
 */
export async function claimDueChecks(pool: Pick<pg.Pool, "query">, { users, batchSize, leaseMs }: ClaimOptions): Promise<ClaimedBatch[]> {
  const { rows } = await pool.query<{ user_id: number; ids: number[] }>(
    `WITH due_users AS (
       SELECT u.id AS user_id, d.first_due
         FROM users u
         CROSS JOIN LATERAL (SELECT p.next_check_at AS first_due FROM proxies p
                              WHERE p.user_id = u.id AND p.next_check_at <= now()
                              ORDER BY p.next_check_at LIMIT 1) d
        ORDER BY d.first_due, u.id
        LIMIT $1
     ), claimed AS (
       SELECT c.id
         FROM due_users du
         CROSS JOIN LATERAL (SELECT p.id FROM proxies p
                              WHERE p.user_id = du.user_id AND p.next_check_at <= now()
                              ORDER BY p.next_check_at LIMIT $2
                              FOR UPDATE SKIP LOCKED) c
     ), moved AS (
       UPDATE proxies p SET next_check_at = now() + make_interval(secs => $3::float8 / 1000)
         FROM claimed WHERE p.id = claimed.id
       RETURNING p.user_id, p.id
     )
     SELECT user_id, array_agg(id ORDER BY id) AS ids FROM moved GROUP BY user_id ORDER BY min(id)`,
    [users, batchSize, leaseMs],
  );
  return rows.map((row) => ({ userId: row.user_id, proxyIds: row.ids }));
}
