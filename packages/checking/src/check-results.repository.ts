import type pg from "pg";
import { reputationOf, type ProtocolWindow } from "./reputation.js";

/** One protocol probed once: a statistic row (and its capped body when responses are saved). */
export interface ProtocolCheck {
  proxyId: number;
  protocol: string;
  alive: boolean;
  /** 0-based attempt that decided (equals `retries` on total failure). */
  attempt: number;
  responseMs: number;
  anonymity: string;
  judgeUrl: string;
  regex: string;
  /** The judge's answer, capped; null when responses are not saved or nothing arrived. */
  body: string | null;
}

/** A proxy's state after the check, from the protocols probed this time. */
export interface ProxyVerdict {
  proxyId: number;
  /** Bits of the protocols probed (skipped ones keep their previous state). */
  probedMask: number;
  aliveMask: number;
  /** Of the best (fastest) alive protocol; ignored when none is alive. */
  responseMs: number;
  anonymity: string;
  attempt: number;
  /** Every protocol probed was dead and no judge was down: one more failed cycle (protocols without a judge are left out). */
  failedCycle: boolean;
  /** Protocols were skipped because all their judges were down: check again soon instead of after the interval. */
  retrySoon: boolean;
}

export interface WriteOptions {
  intervalSeconds: number;
  /** Seconds to the next check of a proxy whose protocols were skipped for judges that are down. */
  retrySoonSeconds?: number;
  /** The owner's auto_remove_failing_proxies: remove after this many failed cycles in a row. */
  autoRemoveAfter: number | null;
  /** The owner's enabled protocols: only their windows make the reputation (a turned-off protocol's old history does not). */
  protocols: readonly string[];
}

export interface WriteOutcome {
  /** Proxies whose rows were written (deleted meanwhile: left out). */
  updated: number[];
  /** Proxies removed for failing `autoRemoveAfter` cycles in a row. */
  removed: number[];
}

interface StatusRow {
  proxy_id: number;
  protocol: string;
  alive: boolean;
  response_time: number;
  anonymity_level: string;
  history: string;
  history_length: number;
}

/**
 * Writes one batch's results for one user in one transaction, set-based:
 * statistics (and bodies), the per-protocol latest status, the proxies rows,
 * and the daily roll-ups. Proxies deleted meanwhile are skipped. Returns the
 * ids whose rows were updated.
 */
export async function writeCheckResults(
  pool: Pick<pg.Pool, "connect">,
  userId: number,
  checks: readonly ProtocolCheck[],
  verdicts: readonly ProxyVerdict[],
  options: WriteOptions,
): Promise<WriteOutcome> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    if (checks.length > 0) await writeChecks(client, userId, checks);
    const ids = verdicts.map((v) => v.proxyId);
    // Reputation from every enabled protocol's window after this check (skipped protocols keep theirs).
    const { rows: statuses } = await client.query<StatusRow>(
      `SELECT proxy_id, protocol, alive, response_time, anonymity_level, history::text AS history, history_length
         FROM proxy_protocol_status WHERE proxy_id = ANY($1::int[]) AND protocol = ANY($2::text[])`,
      [ids, options.protocols],
    );
    const windows = new Map<number, Map<string, ProtocolWindow>>();
    for (const row of statuses) {
      const perProxy = windows.get(row.proxy_id) ?? new Map<string, ProtocolWindow>();
      perProxy.set(row.protocol, { history: BigInt(row.history), length: row.history_length, responseMs: row.response_time, anonymity: row.anonymity_level, alive: row.alive });
      windows.set(row.proxy_id, perProxy);
    }
    const reputations = ids.map((id) => reputationOf(windows.get(id) ?? new Map()));
    const { rows } = await client.query<{ id: number }>(
      // Looked up by primary key (`id = ANY`), each row's values found by its position in the batch: a join
      // with the batch, or the tenant check as an index condition, lets a planner without fresh statistics
      // read every proxy of the user instead (docs/benchmarks.md, "Checker").
      `UPDATE proxies p SET
          (alive_protocols, alive, response_time, anonymity_level, attempt, consecutive_failures, latest_check,
           reputation_score, reputation_label, next_check_at) = (
         SELECT (p.alive_protocols & ~v.probed) | v.alive_mask,
                ((p.alive_protocols & ~v.probed) | v.alive_mask) <> 0,
                CASE WHEN v.alive_mask <> 0 THEN v.response_time WHEN (p.alive_protocols & ~v.probed) <> 0 THEN p.response_time ELSE 0 END,
                CASE WHEN v.alive_mask <> 0 THEN v.anonymity WHEN (p.alive_protocols & ~v.probed) <> 0 THEN p.anonymity_level ELSE 'N/A' END,
                CASE WHEN v.alive_mask <> 0 THEN v.attempt WHEN (p.alive_protocols & ~v.probed) <> 0 THEN p.attempt ELSE NULL END,
                CASE WHEN v.failed THEN p.consecutive_failures + 1
                     WHEN ((p.alive_protocols & ~v.probed) | v.alive_mask) <> 0 THEN 0 ELSE p.consecutive_failures END,
                CASE WHEN v.probed = 0 THEN p.latest_check ELSE now() END,
                v.score,
                v.label,
                now() + make_interval(secs => CASE WHEN v.retry_soon THEN LEAST($3::int, $4::int) ELSE $3::int END)
           FROM (SELECT ($5::smallint[])[k] AS probed, ($6::smallint[])[k] AS alive_mask, ($7::int[])[k] AS response_time,
                        ($8::text[])[k] AS anonymity, ($9::int[])[k] AS attempt, ($10::bool[])[k] AS failed,
                        ($11::bool[])[k] AS retry_soon, ($12::real[])[k] AS score, ($13::text[])[k] AS label
                   FROM array_position($2::int[], p.id) AS k) AS v)
        WHERE p.id = ANY($2::int[]) AND (p.user_id = $1) IS TRUE
        RETURNING p.id`,
      [
        userId,
        ids,
        options.intervalSeconds,
        options.retrySoonSeconds ?? 60,
        verdicts.map((v) => v.probedMask),
        verdicts.map((v) => v.aliveMask),
        verdicts.map((v) => v.responseMs),
        verdicts.map((v) => v.anonymity),
        verdicts.map((v) => v.attempt),
        verdicts.map((v) => v.failedCycle),
        verdicts.map((v) => v.retrySoon),
        reputations.map((r) => r.overall.score),
        reputations.map((r) => r.overall.label),
      ],
    );
    const kinds = reputations.flatMap((r, k) => [
      { id: ids[k] ?? 0, kind: "overall", ...r.overall },
      ...[...r.protocols].map(([kind, value]) => ({ id: ids[k] ?? 0, kind, ...value })),
    ]);
    // Only rows whose score or label changed (most checks leave them as they were); the scalar subquery keeps
    // the comparison a primary-key lookup per row whatever the table's statistics say.
    await client.query(
      `INSERT INTO proxy_reputations (proxy_id, kind, score, label, updated_at)
       SELECT r.id, r.kind, r.score, r.label, now()
         FROM unnest($1::int[], $2::text[], $3::real[], $4::text[]) AS r(id, kind, score, label)
        WHERE (SELECT (o.score, o.label) FROM proxy_reputations o WHERE o.proxy_id = r.id AND o.kind = r.kind) IS DISTINCT FROM (r.score, r.label)
          AND (SELECT p.user_id FROM proxies p WHERE p.id = r.id) = $5
       ON CONFLICT (proxy_id, kind) DO UPDATE SET score = EXCLUDED.score, label = EXCLUDED.label, updated_at = EXCLUDED.updated_at`,
      [kinds.map((r) => r.id), kinds.map((r) => r.kind), kinds.map((r) => r.score), kinds.map((r) => r.label), userId],
    );
    let removed: number[] = [];
    if (options.autoRemoveAfter !== null) {
      const gone = await client.query<{ id: number }>(
        "DELETE FROM proxies WHERE user_id = $1 AND id = ANY($2::int[]) AND consecutive_failures >= $3 RETURNING id",
        [userId, ids, options.autoRemoveAfter],
      );
      removed = gone.rows.map((r) => r.id).sort((a, b) => a - b);
    }
    await client.query("COMMIT");
    const removedSet = new Set(removed);
    return { updated: rows.map((r) => r.id).filter((id) => !removedSet.has(id)).sort((a, b) => a - b), removed };
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

async function writeChecks(client: pg.PoolClient, userId: number, checks: readonly ProtocolCheck[]): Promise<void> {
  const columns = [
    userId,
    checks.map((c) => c.proxyId),
    checks.map((c) => c.protocol),
    checks.map((c) => c.alive),
    checks.map((c) => c.attempt),
    checks.map((c) => c.responseMs),
    checks.map((c) => c.anonymity),
    checks.map((c) => c.judgeUrl),
    checks.map((c) => c.regex),
    checks.map((c) => c.body),
  ];
  // One statement: the batch's checks of proxies that still exist, their statistics and bodies, the latest
  // status per protocol, and the day's roll-ups (one row per user and per judge, not one per check).
  // Ownership is a primary-key lookup per check; statistic ids are drawn before the insert so a body needs
  // no join back to its statistic (both joins a planner without fresh statistics can run badly).
  await client.query(
    `WITH t AS (
       SELECT c.* FROM unnest($2::int[], $3::text[], $4::bool[], $5::int[], $6::int[], $7::text[], $8::text[], $9::text[], $10::text[])
                AS c(proxy_id, protocol, alive, attempt, response_time, anonymity, judge, regex, body)
        WHERE (SELECT p.user_id FROM proxies p WHERE p.id = c.proxy_id) = $1
     ), numbered AS (
       SELECT t.*, nextval('proxy_statistics_id_seq') AS statistic_id FROM t
     ), stats AS (
       INSERT INTO proxy_statistics (id, proxy_id, user_id, protocol, alive, attempt, response_time, anonymity_level, judge_url, regex, created_at)
       SELECT statistic_id, proxy_id, $1, protocol, alive, attempt, response_time, anonymity, judge, regex, now() FROM numbered
     ), bodies AS (
       INSERT INTO proxy_statistic_responses (statistic_id, created_at, body)
       SELECT statistic_id, now(), body FROM numbered WHERE body IS NOT NULL
     ), status AS (
       INSERT INTO proxy_protocol_status (proxy_id, protocol, alive, attempt, response_time, anonymity_level, judge_url, history, history_length, checked_at)
       SELECT proxy_id, protocol, alive, attempt, response_time, anonymity, judge, alive::int::bigint, 1, now() FROM t
       ON CONFLICT (proxy_id, protocol) DO UPDATE SET
         alive = EXCLUDED.alive, attempt = EXCLUDED.attempt, response_time = EXCLUDED.response_time,
         anonymity_level = EXCLUDED.anonymity_level, judge_url = EXCLUDED.judge_url, checked_at = EXCLUDED.checked_at,
         history = (proxy_protocol_status.history << 1) | EXCLUDED.history,
         history_length = LEAST(proxy_protocol_status.history_length + 1, 64)
     ), user_day AS (
       INSERT INTO user_daily_stats (user_id, day, checks, alive_checks)
       SELECT $1, (now() AT TIME ZONE 'UTC')::date, count(*), count(*) FILTER (WHERE alive) FROM t HAVING count(*) > 0
       ON CONFLICT (user_id, day) DO UPDATE SET checks = user_daily_stats.checks + EXCLUDED.checks,
                                                alive_checks = user_daily_stats.alive_checks + EXCLUDED.alive_checks
     )
     INSERT INTO judge_daily_stats (user_id, day, judge_url, elite, anonymous, transparent)
     SELECT $1, (now() AT TIME ZONE 'UTC')::date, judge, count(*) FILTER (WHERE anonymity = 'elite'),
            count(*) FILTER (WHERE anonymity = 'anonymous'), count(*) FILTER (WHERE anonymity = 'transparent')
       FROM t WHERE alive GROUP BY judge
     ON CONFLICT (user_id, day, judge_url) DO UPDATE SET elite = judge_daily_stats.elite + EXCLUDED.elite,
       anonymous = judge_daily_stats.anonymous + EXCLUDED.anonymous, transparent = judge_daily_stats.transparent + EXCLUDED.transparent`,
    columns,
  );
}
