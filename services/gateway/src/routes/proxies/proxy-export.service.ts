import type { Writable } from "node:stream";
import type pg from "pg";
import { to as copyTo } from "pg-copy-streams";
import { buildProxyWhere, inlineSqlCondition, type ProxyFilters, type SqlCondition } from "./proxy-filter.js";
import { COPY_EXPORT_SELECT, CopyExportWriter } from "./proxy-export-copy.js";
import type { ExportFormat, ExportRow, LineTemplate, TemplatePlaceholder } from "./proxy-export-format.js";

/** Rows per FETCH (two in memory: the next is fetched while one is written): big enough to amortise the round trip, small enough to stay in the young generation. */
const FETCH_ROWS = 5_000;

/**
 * `protocol` of a template: a single alive protocol comes from the bitmask;
 * only proxies alive on several look up the fastest in proxy_protocol_status.
 */
const PROTOCOL_SQL = `CASE
    WHEN p.alive_protocols = 0 THEN COALESCE(p.scheme_hint, 'http')
    WHEN p.alive_protocols = 1 THEN 'http'
    WHEN p.alive_protocols = 2 THEN 'https'
    WHEN p.alive_protocols = 4 THEN 'socks4'
    WHEN p.alive_protocols = 8 THEN 'socks5'
    ELSE COALESCE(
      (SELECT s.protocol FROM proxy_protocol_status s WHERE s.proxy_id = p.id AND s.alive ORDER BY s.response_time, s.protocol LIMIT 1),
      CASE WHEN p.alive_protocols & 1 <> 0 THEN 'http' WHEN p.alive_protocols & 2 <> 0 THEN 'https'
           WHEN p.alive_protocols & 4 <> 0 THEN 'socks4' ELSE 'socks5' END)
  END`;

/**
 * The template query's columns, always in RawRow order. A template reads
 * only what it shows (plus the credentials, which decide its
 * credential-free form); the rest are NULL, which costs neither the
 * database nor the parser. No placeholder shows the id, the protocol list
 * or the check time.
 */
function selectList(template: LineTemplate): string[] {
  const column = (expression: string, used: boolean, type: string): string => (used ? expression : `NULL::${type}`);
  const uses = (field: TemplatePlaceholder): boolean => template.fields.has(field);
  return [
    "NULL::int",
    column("p.ip", uses("ip"), "text"),
    column("p.port", uses("port"), "int"),
    "p.username",
    "p.password",
    "NULL::smallint",
    column("p.country", uses("country"), "text"),
    column("p.estimated_type", uses("type"), "text"),
    column("p.anonymity_level", uses("anonymity"), "text"),
    column("p.response_time", uses("time"), "int"),
    column("p.alive", uses("alive"), "boolean"),
    "NULL::text",
    column("p.reputation_label", uses("reputation") || uses("reputation_label"), "text"),
    column("p.reputation_score", uses("reputation_score"), "real"),
    column(PROTOCOL_SQL, uses("protocol"), "text"),
  ];
}

/** A row of the export query; columns a template does not use are null. */
type RawRow = [
  number | null,
  string | null,
  number | null,
  string,
  string,
  number | null,
  string | null,
  string | null,
  string | null,
  number | null,
  boolean | null,
  string | null,
  string | null,
  number | null,
  string | null,
];

/** Shared by every row (read-only): no placeholder shows the protocol list. */
const NO_PROTOCOLS: string[] = [];

function toExportRow(raw: RawRow): ExportRow {
  return {
    id: raw[0] ?? 0,
    ip: raw[1] ?? "",
    port: raw[2] ?? 0,
    username: raw[3],
    password: raw[4],
    protocols: NO_PROTOCOLS,
    country: raw[6] ?? "",
    type: raw[7] ?? "",
    anonymity: raw[8] ?? "",
    responseTime: raw[9] ?? 0,
    alive: raw[10] ?? false,
    latestCheck: raw[11],
    reputationLabel: raw[12] ?? "",
    reputationScore: raw[13] ?? 0,
    protocol: raw[14] ?? "http",
  };
}

/** Resolves when the stream wants more, or when it closed (the client went away). */
function drained(out: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      out.off("drain", done);
      out.off("close", done);
      resolve();
    };
    out.once("drain", done);
    out.once("close", done);
  });
}

export interface ExportTarget {
  /** Called once, right before the first byte (lets HTTP set status and headers late). */
  begin(): void;
  stream: Writable;
}

/**
 * Streams the user's matching proxies in id order: memory holds one batch
 * of rows, and writing waits for the socket (backpressure), so a
 * million-row export is as cheap in memory as ten. Returns the number of
 * rows written; stops early if the client goes away. csv and json read
 * the rows with COPY (proxy-export-copy.ts), line templates through a
 * server-side cursor.
 */
export async function streamExport(
  pool: Pick<pg.Pool, "connect">,
  userId: number,
  filters: ProxyFilters,
  format: ExportFormat,
  target: ExportTarget,
): Promise<number> {
  const where = buildProxyWhere(userId, filters);
  return format.kind === "template" ? streamTemplateExport(pool, where, format.template, target) : streamCopyExport(pool, where, format.kind, target);
}

const gone = (out: Writable): boolean => out.destroyed || out.writableEnded;

/**
 * Resolves once the chunk is taken (at once, or when the stream drains or
 * closes). A stream already gone takes nothing: written to, it would never
 * drain, and its close event has passed.
 */
async function send(out: Writable, chunk: string | Buffer): Promise<void> {
  if (chunk.length === 0 || gone(out)) return;
  if (!out.write(chunk)) await drained(out);
}

/** Line templates: a cursor, FETCH_ROWS a batch; the next FETCH is on its way while a batch is formatted and written. */
async function streamTemplateExport(pool: Pick<pg.Pool, "connect">, where: SqlCondition, template: LineTemplate, target: ExportTarget): Promise<number> {
  const sql = `SELECT ${selectList(template).join(", ")} FROM proxies p WHERE ${where.text} ORDER BY p.id`;
  const out = target.stream;
  const client = await pool.connect();
  let written = 0;
  let broken = false;
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    await client.query(`DECLARE proxy_export NO SCROLL CURSOR FOR ${sql}`, where.params);
    target.begin();
    const fetch = (): Promise<pg.QueryResult<RawRow>> => client.query<RawRow>({ text: `FETCH ${FETCH_ROWS} FROM proxy_export`, rowMode: "array" });
    let next = fetch();
    for (;;) {
      const { rows } = await next;
      if (rows.length === 0 || gone(out)) break;
      next = fetch();
      next.catch(() => undefined);
      let chunk = "";
      for (const raw of rows) chunk += `${template.render(toExportRow(raw))}\n`;
      written += rows.length;
      await send(out, chunk);
    }
    await client.query("COMMIT");
  } catch (error) {
    broken = true;
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release(broken);
  }
  return written;
}

/**
 * csv and json: one `COPY (SELECT ...) TO STDOUT` (a single statement, so
 * one snapshot), read as the socket asks for it: pg-copy-streams pauses
 * the connection while the response waits. COPY takes no parameters, so
 * the filter's values are written in as literals (inlineSqlCondition).
 * A client that goes away mid-export leaves the connection inside the
 * COPY: it is closed, not returned to the pool, which ends the backend's
 * statement.
 */
async function streamCopyExport(pool: Pick<pg.Pool, "connect">, where: SqlCondition, kind: "csv" | "json", target: ExportTarget): Promise<number> {
  const sql = `COPY (SELECT ${COPY_EXPORT_SELECT} FROM proxies p WHERE ${inlineSqlCondition(where)} ORDER BY p.id) TO STDOUT`;
  const out = target.stream;
  const writer = new CopyExportWriter(kind);
  const client = await pool.connect();
  let complete = false;
  try {
    const copy = client.query(copyTo(sql));
    let begun = false;
    // Status and headers wait for the first rows (or the end): an error before them is still a JSON 500.
    const begin = async (): Promise<void> => {
      if (begun) return;
      begun = true;
      target.begin();
      await send(out, writer.begin());
    };
    for await (const chunk of copy as AsyncIterable<Buffer>) {
      await begin();
      await send(out, writer.push(chunk));
      if (gone(out)) return writer.rows;
    }
    await begin();
    await send(out, writer.end());
    complete = true;
    return writer.rows;
  } finally {
    client.release(!complete);
  }
}
