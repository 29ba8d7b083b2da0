import { once } from "node:events";
import type pg from "pg";
import { from as copyFrom } from "pg-copy-streams";

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

/** COPY text format: backslash, tab, newline and carriage return escaped; null is \N. */
function copyText(value: string | number | null): string {
  if (value === null) return "\\N";
  if (typeof value === "number") return String(value);
  return /[\\\t\n\r]/.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => (c === "\\" ? "\\\\" : c === "\t" ? "\\t" : c === "\n" ? "\\n" : "\\r")) : value;
}

const COPY_COLUMNS = "id, user_id, ip, port, username, password, scheme_hint, country, asn, estimated_type";
const SAVEPOINT = "roost_upload_copy";

/**
 * Stores a batch of proxies the user does not have (the caller holds the
 * user's upload lock and has removed duplicates and owned proxies) with
 * COPY, the cheapest way into PostgreSQL: ids are taken from the table's
 * sequence first so they are known without RETURNING. Returns the ids in
 * batch order.
 *
 * If a proxy turns out to exist after all (a writer that did not take the
 * upload lock), the COPY fails on the identity index; the batch is then
 * stored again with `INSERT ... ON CONFLICT DO NOTHING`, inside a savepoint,
 * so the upload goes on with exactly the rows that were missing.
 */
export async function copyNewProxies(client: CopyClient, userId: number, batch: ProxyInsertBatch): Promise<number[]> {
  const count = batch.ip.length;
  if (count === 0) return [];
  // The ids are asked for first; the rows' text is built while PostgreSQL answers.
  const allocated = client.query<{ ids: string }>(
    "SELECT string_agg(nextval(pg_get_serial_sequence('proxies', 'id'))::text, ',') AS ids FROM generate_series(1, $1)",
    [count],
  );
  allocated.catch(() => undefined);
  const tails: string[] = new Array<string>(count);
  for (let i = 0; i < count; i++) {
    tails[i] =
      `\t${userId}\t${copyText(batch.ip[i] ?? "")}\t${batch.port[i]}\t${copyText(batch.username[i] ?? "")}\t${copyText(batch.password[i] ?? "")}` +
      `\t${copyText(batch.schemeHint[i] ?? null)}\t${copyText(batch.country[i] ?? "N/A")}\t${copyText(batch.asn[i] ?? null)}\t${copyText(batch.estimatedType[i] ?? "unknown")}\n`;
  }
  const { rows } = await allocated;
  const ids = (rows[0]?.ids ?? "").split(",").map(Number);
  if (ids.length !== count) throw new Error(`expected ${count} ids from the sequence, got ${ids.length}`);
  const lines: string[] = new Array<string>(count);
  for (let i = 0; i < count; i++) lines[i] = `${ids[i]}${tails[i]}`;
  await client.query(`SAVEPOINT ${SAVEPOINT}`);
  try {
    const copy = client.query(copyFrom(`COPY proxies (${COPY_COLUMNS}) FROM STDIN`));
    const done = Promise.race([once(copy, "finish"), once(copy, "error").then(([error]) => Promise.reject(error as Error))]);
    copy.end(lines.join(""));
    await done;
  } catch (error) {
    if ((error as { code?: string }).code !== "23505") throw error;
    await client.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`);
    return insertProxies(client, userId, batch);
  }
  await client.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
  return ids;
}
