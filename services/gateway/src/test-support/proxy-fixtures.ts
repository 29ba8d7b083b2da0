import type pg from "pg";
import { buildProxyWhere, protocolMask, protocolsOfMask, type ProxyFilters } from "@roost/inventory";
import type { GatewayHarness } from "./gateway.harness.js";

/**
 * Checked proxies for tests, written straight into the tables the checker
 * will own (it does not exist yet): the proxies row with its denormalised
 * filter columns, per-protocol status, reputations and statistics.
 */
export interface ProxyFixture {
  ip: string;
  port?: number;
  username?: string;
  password?: string;
  schemeHint?: string | null;
  country?: string;
  estimatedType?: string;
  /** Protocols alive at their latest check; sets alive, alive_protocols. */
  aliveOn?: ("http" | "https" | "socks4" | "socks5")[];
  responseTime?: number;
  anonymity?: string;
  attempt?: number | null;
  reputationLabel?: string;
  reputationScore?: number;
  latestCheck?: Date | null;
}

export async function insertProxy(pool: pg.Pool, userId: number, fixture: ProxyFixture): Promise<number> {
  const aliveOn = fixture.aliveOn ?? [];
  const mask = protocolMask(aliveOn);
  const alive = mask !== 0;
  const { rows } = await pool.query<{ id: number }>(
    `INSERT INTO proxies (user_id, ip, port, username, password, scheme_hint, country, estimated_type, alive, alive_protocols,
                          response_time, anonymity_level, attempt, reputation_label, reputation_score, latest_check)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING id`,
    [
      userId,
      fixture.ip,
      fixture.port ?? 8080,
      fixture.username ?? "",
      fixture.password ?? "",
      fixture.schemeHint ?? null,
      fixture.country ?? "US",
      fixture.estimatedType ?? "unknown",
      alive,
      mask,
      fixture.responseTime ?? (alive ? 100 : 0),
      fixture.anonymity ?? (alive ? "elite" : "N/A"),
      fixture.attempt === undefined ? (alive ? 0 : null) : fixture.attempt,
      fixture.reputationLabel ?? "unknown",
      fixture.reputationScore ?? 0,
      fixture.latestCheck === undefined ? (alive ? new Date() : null) : fixture.latestCheck,
    ],
  );
  const id = rows[0]?.id;
  if (id === undefined) throw new Error("insert failed");
  return id;
}

export interface ProtocolStatusFixture {
  protocol: "http" | "https" | "socks4" | "socks5";
  alive: boolean;
  attempt?: number;
  responseTime?: number;
  anonymity?: string;
  judgeUrl?: string;
  checkedAt?: Date;
}

export async function insertProtocolStatus(pool: pg.Pool, proxyId: number, status: ProtocolStatusFixture): Promise<void> {
  await pool.query(
    `INSERT INTO proxy_protocol_status (proxy_id, protocol, alive, attempt, response_time, anonymity_level, judge_url, history, history_length, checked_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 3, $9)`,
    [
      proxyId,
      status.protocol,
      status.alive,
      status.attempt ?? 0,
      status.responseTime ?? 0,
      status.anonymity ?? (status.alive ? "elite" : "N/A"),
      status.judgeUrl ?? "http://judge.example/",
      // Three results, all alive or all dead.
      status.alive ? 0b111 : 0,
      status.checkedAt ?? new Date(),
    ],
  );
}

export async function insertReputation(pool: pg.Pool, proxyId: number, kind: string, score: number, label: string): Promise<void> {
  await pool.query(`INSERT INTO proxy_reputations (proxy_id, kind, score, label) VALUES ($1, $2, $3, $4)`, [proxyId, kind, score, label]);
}

export interface StatisticFixture {
  protocol?: string;
  alive?: boolean;
  attempt?: number;
  responseTime?: number;
  anonymity?: string;
  judgeUrl?: string;
  regex?: string;
  createdAt: Date;
  body?: string;
}

/** Returns the statistic id (bigint as a decimal string). */
export async function insertStatistic(pool: pg.Pool, userId: number, proxyId: number, stat: StatisticFixture): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO proxy_statistics (proxy_id, user_id, protocol, alive, attempt, response_time, anonymity_level, judge_url, regex, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id::text AS id`,
    [
      proxyId,
      userId,
      stat.protocol ?? "http",
      stat.alive ?? true,
      stat.attempt ?? 0,
      stat.responseTime ?? 120,
      stat.anonymity ?? "elite",
      stat.judgeUrl ?? "http://judge.example/",
      stat.regex ?? "default",
      stat.createdAt,
    ],
  );
  const id = rows[0]?.id;
  if (id === undefined) throw new Error("insert failed");
  if (stat.body !== undefined) {
    await pool.query(`INSERT INTO proxy_statistic_responses (statistic_id, created_at, body) VALUES ($1, $2, $3)`, [id, stat.createdAt, stat.body]);
  }
  return id;
}

/** The user id behind a token (GET /api/checkLogin). */
export async function userIdOfToken(h: GatewayHarness, token: string): Promise<number> {
  const res = await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${token}`);
  return (res.body as { user_id: number }).user_id;
}

/**
 * The list page as the contract defines it, computed the plain way (LIMIT/OFFSET
 * in id order, count(*), the driver's own type parsing): the reference the
 * served page's bytes must equal.
 */
export async function referencePage(pool: pg.Pool, userId: number, filters: ProxyFilters, page: number, pageSize: number): Promise<unknown> {
  const limit = Math.min(pageSize, 100);
  const where = buildProxyWhere(userId, filters, "p", 3);
  const [rows, total] = await Promise.all([
    pool.query<{
      id: number; ip: string; port: number; alive_protocols: number; estimated_type: string; response_time: number; country: string;
      anonymity_level: string; alive: boolean; latest_check: Date | null; reputation_label: string; reputation_score: number;
    }>(
      `SELECT p.id, p.ip, p.port, p.alive_protocols, p.estimated_type, p.response_time, p.country, p.anonymity_level, p.alive,
              p.latest_check, p.reputation_label, p.reputation_score
         FROM proxies p WHERE ${where.text} ORDER BY p.id LIMIT $1 OFFSET $2`,
      [limit, (page - 1) * limit, ...where.params],
    ),
    pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM proxies p WHERE ${buildProxyWhere(userId, filters).text}`, buildProxyWhere(userId, filters).params),
  ]);
  return {
    proxies: rows.rows.map((row) => ({
      id: row.id,
      ip: row.ip,
      port: row.port,
      protocols: protocolsOfMask(row.alive_protocols),
      estimated_type: row.estimated_type,
      response_time: row.response_time,
      country: row.country,
      anonymity_level: row.anonymity_level,
      alive: row.alive,
      latest_check: row.latest_check ? row.latest_check.toISOString() : null,
      reputation: { overall: { kind: "overall", score: row.reputation_score, label: row.reputation_label } },
    })),
    total: total.rows[0]?.n ?? 0,
  };
}
