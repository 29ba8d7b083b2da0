import type pg from "pg";

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
