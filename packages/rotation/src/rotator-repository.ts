import { PROXY_PROTOCOLS, type ProxyProtocol } from "@roost/inventory";
import type pg from "pg";

import type { Upstream } from "./upstream-pool.js";

/** A rotator row as the listener needs it; the password is the stored HMAC. */
export interface RotatorDefinition {
  id: number;
  userId: number;
  name: string;
  instanceId: string;
  protocol: ProxyProtocol;
  listenProtocol: ProxyProtocol;
  listenPort: number;
  authRequired: boolean;
  authUsername: string;
  authPasswordHash: string;
  reputationLabels: string[];
  uptimeFilterType: "min" | "max" | null;
  uptimePercentage: number | null;
}

interface RotatorRow {
  id: number;
  user_id: number;
  name: string;
  instance_id: string;
  protocol: string;
  listen_protocol: string;
  listen_port: number;
  auth_required: boolean;
  auth_username: string | null;
  auth_password: string | null;
  reputation_labels: string[];
  uptime_filter_type: string | null;
  uptime_percentage: number | null;
}

const isProtocol = (value: string): value is ProxyProtocol => (PROXY_PROTOCOLS as readonly string[]).includes(value);

function toDefinition(row: RotatorRow): RotatorDefinition | undefined {
  if (!isProtocol(row.protocol) || !isProtocol(row.listen_protocol)) return undefined;
  const filter = row.uptime_filter_type === "min" || row.uptime_filter_type === "max" ? row.uptime_filter_type : null;
  return {
    id: row.id,
    userId: row.user_id,
    name: row.name,
    instanceId: row.instance_id,
    protocol: row.protocol,
    listenProtocol: row.listen_protocol,
    listenPort: row.listen_port,
    authRequired: row.auth_required,
    authUsername: row.auth_username ?? "",
    authPasswordHash: row.auth_password ?? "",
    reputationLabels: row.reputation_labels,
    uptimeFilterType: filter,
    uptimePercentage: filter ? row.uptime_percentage : null,
  };
}

/** Every rotator hosted by one instance (rows with an unknown protocol are skipped). */
export async function loadInstanceRotators(pool: pg.Pool, instanceId: string): Promise<RotatorDefinition[]> {
  const { rows } = await pool.query<RotatorRow>(
    `SELECT id, user_id, name, instance_id, protocol, listen_protocol, listen_port, auth_required, auth_username,
            auth_password, reputation_labels, uptime_filter_type, uptime_percentage
       FROM rotating_proxies WHERE instance_id = $1 ORDER BY id`,
    [instanceId],
  );
  return rows.flatMap((row) => toDefinition(row) ?? []);
}

interface UpstreamRow {
  rotator_id: number;
  id: number;
  ip: string;
  port: number;
  username: string;
  password: string;
  country: string;
}

// The rotator protocol's bit in proxies.alive_protocols (protocolBit in SQL).
const PROTOCOL_BIT_SQL = `(1 << (array_position(ARRAY[${PROXY_PROTOCOLS.map((p) => `'${p}'`).join(",")}]::text[], r.protocol) - 1))`;

// The pool's predicate, shared by the loaders and the counters so they cannot disagree.
const POOL_FROM_WHERE = `
       FROM rotating_proxies r
       JOIN proxies p ON p.user_id = r.user_id AND p.alive AND (p.alive_protocols & ${PROTOCOL_BIT_SQL}) <> 0
       LEFT JOIN proxy_protocol_status s ON s.proxy_id = p.id AND s.protocol = r.protocol
       CROSS JOIN LATERAL (
         SELECT CASE WHEN COALESCE(s.history_length, 0) = 0 THEN 0
                     ELSE bit_count(s.history::bit(64)) * 100.0 / s.history_length END AS percent
       ) uptime
      WHERE r.id = ANY($1::int[])
        AND (cardinality(r.reputation_labels) = 0 OR p.reputation_label = ANY(r.reputation_labels))
        AND (r.uptime_filter_type IS NULL OR r.uptime_percentage IS NULL
             OR (r.uptime_filter_type = 'min' AND uptime.percent >= r.uptime_percentage)
             OR (r.uptime_filter_type = 'max' AND uptime.percent <= r.uptime_percentage))`;

const toUpstream = (row: UpstreamRow): Upstream => ({ proxyId: row.id, ip: row.ip, port: row.port, username: row.username, password: row.password, country: row.country });

/**
 * The pool of each given rotator: the owner's proxies alive on the rotator's
 * protocol, with a listed reputation label (any when none is listed) and
 * within the uptime filter (popcount of the protocol's history / its length).
 */
export async function loadRotatorUpstreams(pool: pg.Pool, rotatorIds: readonly number[]): Promise<Map<number, Upstream[]>> {
  const pools = new Map<number, Upstream[]>(rotatorIds.map((id) => [id, []]));
  if (rotatorIds.length === 0) return pools;
  const { rows } = await pool.query<UpstreamRow>(`SELECT r.id AS rotator_id, p.id, p.ip, p.port, p.username, p.password, p.country ${POOL_FROM_WHERE} ORDER BY r.id, p.id`, [rotatorIds]);
  for (const row of rows) pools.get(row.rotator_id)?.push(toUpstream(row));
  return pools;
}

/** Pool sizes of the given rotators, counted in the database (the list's `alive_proxy_count`). */
export async function countRotatorUpstreams(pool: pg.Pool, rotatorIds: readonly number[]): Promise<Map<number, number>> {
  const counts = new Map<number, number>(rotatorIds.map((id) => [id, 0]));
  if (rotatorIds.length === 0) return counts;
  const { rows } = await pool.query<{ rotator_id: number; n: number }>(`SELECT r.id AS rotator_id, count(*)::int AS n ${POOL_FROM_WHERE} GROUP BY r.id`, [rotatorIds]);
  for (const row of rows) counts.set(row.rotator_id, row.n);
  return counts;
}

/**
 * The rotation's next member after proxy `afterProxyId`: the first pool member
 * with a larger id, else (wrapping) the first; undefined when the pool is empty.
 * The same order as the listener's ring (UpstreamPool), read without the whole pool.
 */
export async function rotatorUpstreamAfter(pool: pg.Pool, rotatorId: number, afterProxyId: number): Promise<Upstream | undefined> {
  const { rows } = await pool.query<UpstreamRow>(
    `SELECT r.id AS rotator_id, p.id, p.ip, p.port, p.username, p.password, p.country ${POOL_FROM_WHERE} ORDER BY p.id <= $2, p.id LIMIT 1`,
    [[rotatorId], afterProxyId],
  );
  return rows[0] ? toUpstream(rows[0]) : undefined;
}
