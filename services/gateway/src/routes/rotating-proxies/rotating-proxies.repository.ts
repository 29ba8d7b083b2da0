import type pg from "pg";

import type { RotatorCreate } from "./rotating-proxies.schema.js";

export interface RotatorRow {
  id: number;
  name: string;
  instance_id: string;
  protocol: string;
  listen_protocol: string;
  transport_protocol: string;
  listen_transport_protocol: string;
  uptime_filter_type: string | null;
  uptime_percentage: number | null;
  listen_port: number;
  auth_required: boolean;
  reputation_labels: string[];
  created_at: Date;
}

const COLUMNS = `id, name, instance_id, protocol, listen_protocol, transport_protocol, listen_transport_protocol, uptime_filter_type,
  uptime_percentage, listen_port, auth_required, reputation_labels, created_at`;

export async function listRotators(pool: pg.Pool, userId: number): Promise<RotatorRow[]> {
  return (await pool.query<RotatorRow>(`SELECT ${COLUMNS} FROM rotating_proxies WHERE user_id = $1 ORDER BY id`, [userId])).rows;
}

export async function findRotator(pool: pg.Pool, userId: number, id: number): Promise<RotatorRow | undefined> {
  return (await pool.query<RotatorRow>(`SELECT ${COLUMNS} FROM rotating_proxies WHERE id = $1 AND user_id = $2`, [id, userId])).rows[0];
}

export async function deleteRotator(pool: pg.Pool, userId: number, id: number): Promise<{ instance_id: string } | undefined> {
  return (await pool.query<{ instance_id: string }>("DELETE FROM rotating_proxies WHERE id = $1 AND user_id = $2 RETURNING instance_id", [id, userId])).rows[0];
}

/** Ports in use per instance within each instance's range. */
export async function usedPortCounts(pool: pg.Pool, ranges: readonly { id: string; start: number; end: number }[]): Promise<Map<string, number>> {
  if (ranges.length === 0) return new Map();
  const { rows } = await pool.query<{ instance_id: string; used: number }>(
    `SELECT r.instance_id, count(*)::int AS used
       FROM rotating_proxies r
       JOIN unnest($1::text[], $2::int[], $3::int[]) AS i(id, port_start, port_end) ON i.id = r.instance_id
      WHERE r.listen_port BETWEEN i.port_start AND i.port_end
      GROUP BY r.instance_id`,
    [ranges.map((r) => r.id), ranges.map((r) => r.start), ranges.map((r) => r.end)],
  );
  return new Map(rows.map((row) => [row.instance_id, row.used]));
}

export type InsertOutcome = { kind: "created"; row: RotatorRow } | { kind: "no_port" } | { kind: "duplicate_name" };

const UNIQUE_VIOLATION = "23505";
const NAME_CONSTRAINT = "rotating_proxies_user_id_name_key";

/**
 * Allocates the lowest free port of the instance's range and inserts, under a
 * transaction-scoped advisory lock per instance so concurrent creates never
 * pick the same port; a duplicate name is the unique constraint's answer.
 */
export async function insertRotator(pool: pg.Pool, userId: number, create: RotatorCreate, passwordHash: string | null, range: { start: number; end: number }): Promise<InsertOutcome> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(hashtext('roost:rotator-ports'), hashtext($1))", [create.instanceId]);
    const { rows: free } = await client.query<{ port: number }>(
      `SELECT port FROM generate_series($2::int, $3::int) AS port
        WHERE NOT EXISTS (SELECT 1 FROM rotating_proxies WHERE instance_id = $1 AND listen_port = port)
        ORDER BY port LIMIT 1`,
      [create.instanceId, range.start, range.end],
    );
    const port = free[0]?.port;
    if (port === undefined) {
      await client.query("ROLLBACK");
      return { kind: "no_port" };
    }
    const { rows } = await client.query<RotatorRow>(
      `INSERT INTO rotating_proxies (user_id, name, instance_id, protocol, listen_protocol, transport_protocol, listen_transport_protocol,
                                     uptime_filter_type, uptime_percentage, listen_port, auth_required, auth_username, auth_password, reputation_labels)
       VALUES ($1, $2, $3, $4, $5, 'tcp', 'tcp', $6, $7, $8, $9, $10, $11, $12)
       RETURNING ${COLUMNS}`,
      [userId, create.name, create.instanceId, create.protocol, create.listenProtocol, create.uptimeFilterType, create.uptimePercentage, port, create.authRequired, create.authUsername, passwordHash, create.reputationLabels],
    );
    await client.query("COMMIT");
    const row = rows[0];
    if (!row) throw new Error("INSERT … RETURNING gave no row");
    return { kind: "created", row };
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    if (isNameConflict(error)) return { kind: "duplicate_name" };
    throw error;
  } finally {
    client.release();
  }
}

function isNameConflict(error: unknown): boolean {
  return typeof error === "object" && error !== null && "code" in error && error.code === UNIQUE_VIOLATION && "constraint" in error && error.constraint === NAME_CONSTRAINT;
}

export async function userProtocols(pool: pg.Pool, userId: number): Promise<Record<string, boolean> | undefined> {
  const row = (
    await pool.query<{ http: boolean; https: boolean; socks4: boolean; socks5: boolean }>(
      "SELECT http_protocol AS http, https_protocol AS https, socks4_protocol AS socks4, socks5_protocol AS socks5 FROM user_settings WHERE user_id = $1",
      [userId],
    )
  ).rows[0];
  return row ? { ...row } : undefined;
}
