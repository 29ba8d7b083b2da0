import { once } from "node:events";
import type pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { COPY_TEXT_COLUMNS, type ProxyCopyText } from "./proxy-copy-text.js";

/** What the upload writes per proxy; arrays are columns of one batch. */
export interface ProxyInsertBatch {
  ip: string[];
  port: number[];
  username: string[];
  password: string[];
  schemeHint: (string | null)[];
  country: string[];
  asn: (number | null)[];
  estimatedType: string[];
}

export type Queryable = Pick<pg.PoolClient, "query">;

/** A client that can also run COPY (a pg.PoolClient). */
export type CopyClient = Queryable & { query(stream: ReturnType<typeof copyFrom>): ReturnType<typeof copyFrom> };

/** Advisory lock class of uploads (second key: the user id): one upload per user at a time. */
const UPLOAD_LOCK_CLASS = 0x70726f78;

/**
 * Serialises a user's uploads for the rest of the transaction, so the proxy
 * limit and the counters of concurrent uploads stay exact.
 */
export async function lockUserUploads(client: Queryable, userId: number): Promise<void> {
  await client.query("SELECT pg_advisory_xact_lock($1, $2)", [UPLOAD_LOCK_CLASS, userId]);
}

/**
 * Holds the user's row for the rest of the transaction (FOR KEY SHARE: a password or settings change goes on,
 * the account's deletion waits); false when the account is gone. `proxies` has no foreign key to `users`, so an
 * upload committing after the account's purge would leave rows nothing removes.
 */
export async function holdUserRow(client: Queryable, userId: number): Promise<boolean> {
  const { rowCount } = await client.query("SELECT 1 FROM users WHERE id = $1 FOR KEY SHARE", [userId]);
  return rowCount === 1;
}

export async function blacklistHasRanges(client: Queryable): Promise<boolean> {
  const { rows } = await client.query<{ present: boolean }>("SELECT EXISTS (SELECT 1 FROM blacklist_ranges) AS present");
  return rows[0]?.present ?? false;
}

/** Positions (0-based) of the addresses inside a blacklist range: one GiST probe per address. */
export async function selectBlacklisted(client: Queryable, ips: string[]): Promise<number[]> {
  const { rows } = await client.query<{ position: number }>(
    `SELECT (t.n - 1)::int AS position FROM unnest($1::inet[]) WITH ORDINALITY AS t(ip, n)
      WHERE EXISTS (SELECT 1 FROM blacklist_ranges b WHERE b.cidr >>= t.ip)`,
    [ips],
  );
  return rows.map((r) => r.position);
}

const INPUT = `unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::text[])
  WITH ORDINALITY AS t(ip, port, username, password, scheme_hint, country, asn, estimated_type, n)`;
const COLUMNS = "user_id, ip, port, username, password, scheme_hint, country, asn, estimated_type";

const params = (userId: number, batch: ProxyInsertBatch): unknown[] => [
  userId,
  batch.ip,
  batch.port,
  batch.username,
  batch.password,
  batch.schemeHint,
  batch.country,
  batch.asn,
  batch.estimatedType,
];

/**
 * Inserts a batch in one statement; proxies the user already has are left
 * alone (ON CONFLICT on the identity). Returns the new ids in batch order.
 */
export async function insertProxies(client: Queryable, userId: number, batch: ProxyInsertBatch): Promise<number[]> {
  const { rows } = await client.query<{ id: number }>(
    `INSERT INTO proxies (${COLUMNS})
     SELECT $1, t.ip, t.port, t.username, t.password, t.scheme_hint, t.country, t.asn, t.estimated_type FROM ${INPUT}
      ORDER BY t.n
     ON CONFLICT (user_id, ip, port, username, password) DO NOTHING
     RETURNING id`,
    params(userId, batch),
  );
  return rows.map((r) => r.id);
}

/**
 * The same under a proxy limit: only the first `room` proxies the user does
 * not have yet are inserted (in batch order). `fresh` is how many were new.
 */
export async function insertProxiesWithin(
  client: Queryable,
  userId: number,
  batch: ProxyInsertBatch,
  room: number,
): Promise<{ ids: number[]; fresh: number }> {
  const { rows } = await client.query<{ fresh: number; ids: number[] }>(
    `WITH input AS (SELECT * FROM ${INPUT}),
     fresh AS (
       SELECT * FROM input i WHERE NOT EXISTS (
         SELECT 1 FROM proxies p
          WHERE p.user_id = $1 AND p.ip = i.ip AND p.port = i.port AND p.username = i.username AND p.password = i.password)),
     inserted AS (
       INSERT INTO proxies (${COLUMNS})
       SELECT $1, ip, port, username, password, scheme_hint, country, asn, estimated_type
         FROM (SELECT * FROM fresh ORDER BY n LIMIT $10) picked ORDER BY n
       ON CONFLICT (user_id, ip, port, username, password) DO NOTHING
       RETURNING id)
     SELECT (SELECT count(*) FROM fresh)::int AS fresh,
            COALESCE((SELECT array_agg(id ORDER BY id) FROM inserted), '{}'::int[]) AS ids`,
    [...params(userId, batch), room],
  );
  return { ids: rows[0]?.ids ?? [], fresh: rows[0]?.fresh ?? 0 };
}

/** Whether the user holds any proxy (an upload into an empty list needs no duplicate probe). */
export async function userHasProxies(client: Queryable, userId: number): Promise<boolean> {
  const { rows } = await client.query<{ present: boolean }>("SELECT EXISTS (SELECT 1 FROM proxies WHERE user_id = $1) AS present", [userId]);
  return rows[0]?.present ?? false;
}

/** Positions (0-based) of the batch's proxies the user already has (identity equality). */
export async function selectOwnedPositions(client: Queryable, userId: number, batch: Pick<ProxyInsertBatch, "ip" | "port" | "username" | "password">): Promise<number[]> {
  const { rows } = await client.query<{ position: number }>(
    `SELECT (t.n - 1)::int AS position
       FROM unnest($2::text[], $3::int[], $4::text[], $5::text[]) WITH ORDINALITY AS t(ip, port, username, password, n)
      WHERE EXISTS (SELECT 1 FROM proxies p WHERE p.user_id = $1 AND p.ip = t.ip AND p.port = t.port
                       AND p.username = t.username AND p.password = t.password)`,
    [userId, batch.ip, batch.port, batch.username, batch.password],
  );
  return rows.map((r) => r.position);
}

const SAVEPOINT = "roost_upload_copy";

/**
 * Stores batches of new proxies with COPY in the caller's transaction (caller holds the upload lock and removed
 * duplicates and owned proxies); ids come from the sequence first. If a proxy exists after all, the batch rolls back
 * to its savepoint and is inserted with ON CONFLICT DO NOTHING. One savepoint stays open; COMMIT or ROLLBACK ends it.
 */
export class ProxyCopier {
  private savepointOpen = false;

  constructor(
    private readonly client: CopyClient,
    private readonly userId: number,
  ) {}

  /**
   * Takes `count` ids from the table's sequence now (sequences are not
   * transactional: unused ids are a gap, as after any rollback). The answer
   * is awaited by `copy`, so a failure here surfaces there.
   */
  reserveIds(count: number): Promise<number[]> {
    const reserved = this.takeIds(count);
    reserved.catch(() => undefined);
    return reserved;
  }

  /**
   * Stores the rows; `columns` gives the same rows for the fallback
   * (only called if it is needed). `reserved` are ids from reserveIds, at
   * least one per row. Returns the ids in row order.
   */
  async copy(rows: ProxyCopyText, columns: () => ProxyInsertBatch, reserved?: Promise<number[]>): Promise<number[]> {
    const count = rows.rows;
    if (count === 0) return [];
    // A reservation made while a failed COPY had aborted the transaction was refused: take the ids again.
    const ready = reserved ? await reserved.catch(() => null) : null;
    const ids = ready !== null && ready.length >= count ? ready.slice(0, count) : await this.takeIds(count);
    const savepoint = `${this.savepointOpen ? `RELEASE SAVEPOINT ${SAVEPOINT}; ` : ""}SAVEPOINT ${SAVEPOINT}; `;
    try {
      // A simple-protocol message may end with COPY FROM STDIN; the statements before it run first.
      const copy = this.client.query(copyFrom(`${savepoint}COPY proxies (${COPY_TEXT_COLUMNS}) FROM STDIN`));
      const done = Promise.race([once(copy, "finish"), once(copy, "error").then(([error]) => Promise.reject(error as Error))]);
      copy.end(rows.withIds(ids));
      await done;
      this.savepointOpen = true;
    } catch (error) {
      if ((error as { code?: string }).code !== "23505") throw error;
      // The savepoint was taken before the COPY failed: only this batch is undone.
      this.savepointOpen = true;
      await this.client.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`);
      return insertProxies(this.client, this.userId, columns());
    }
    return ids;
  }

  private async takeIds(count: number): Promise<number[]> {
    // `count` is a length, interpolated as a number. The sequence lookup and its regclass cast sit in an
    // InitPlan, so they run once per statement instead of once per row.
    const { rows } = await this.client.query<{ first: number; contiguous: boolean; ids: string | null }>(
      `WITH taken AS (SELECT nextval((SELECT pg_get_serial_sequence('proxies', 'id')::regclass)) AS id FROM generate_series(1, ${Math.trunc(count)}))
       SELECT min(id)::float8 AS first, (max(id) - min(id) + 1 = count(*)) AS contiguous,
              CASE WHEN max(id) - min(id) + 1 <> count(*) THEN string_agg(id::text, ',') END AS ids FROM taken`,
    );
    const taken = rows[0];
    // Usually one run of numbers; another session's nextval in between splits it.
    const ids = taken?.contiguous ? Array.from({ length: count }, (_, i) => taken.first + i) : (taken?.ids ?? "").split(",").map(Number);
    if (ids.length !== count) throw new Error(`expected ${count} ids from the sequence, got ${ids.length}`);
    return ids;
  }
}

/** True when the scrape source exists and belongs to the user. */
export async function sourceBelongsTo(client: Queryable, userId: number, sourceId: number): Promise<boolean> {
  const { rowCount } = await client.query("SELECT 1 FROM scrape_sources WHERE id = $1 AND user_id = $2", [sourceId, userId]);
  return (rowCount ?? 0) > 0;
}

/** Links the user's proxies with these identities to the source; links that exist get the new `last_seen_at`. */
export async function linkProxiesToSource(
  client: Queryable,
  userId: number,
  sourceId: number,
  batch: Pick<ProxyInsertBatch, "ip" | "port" | "username" | "password">,
  seenAt: Date,
): Promise<void> {
  await client.query(
    `INSERT INTO proxy_sources (proxy_id, source_id, last_seen_at)
     SELECT p.id, $2, $7 FROM unnest($3::text[], $4::int[], $5::text[], $6::text[]) AS t(ip, port, username, password)
       JOIN proxies p ON p.user_id = $1 AND p.ip = t.ip AND p.port = t.port AND p.username = t.username AND p.password = t.password
     ON CONFLICT (proxy_id, source_id) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at`,
    [userId, sourceId, batch.ip, batch.port, batch.username, batch.password, seenAt],
  );
}
