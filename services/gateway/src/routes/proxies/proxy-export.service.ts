import type { Writable } from "node:stream";
import type pg from "pg";
import { buildProxyWhere, type ProxyFilters } from "./proxy-filter.js";
import { csvLine, EXPORT_COLUMNS, jsonObject, type ExportFormat, type ExportRow, type TemplatePlaceholder } from "./proxy-export-format.js";
import { PROXY_PROTOCOLS } from "./proxy.schema.js";

/** Rows per FETCH: big enough to amortise the round trip, small enough to stay a few MB. */
const FETCH_ROWS = 10_000;

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
 * The export query's columns, always in RawRow order. A template reads only
 * what it shows (plus the credentials, which decide its credential-free
 * form); the rest are NULL, which costs neither the database nor the parser.
 */
function selectList(format: ExportFormat): string[] {
  const all = format.kind !== "template";
  const uses = (field: TemplatePlaceholder): boolean => all || (format.kind === "template" && format.template.fields.has(field));
  const column = (expression: string, used: boolean, type: string): string => (used ? expression : `NULL::${type}`);
  return [
    column("p.id", all, "int"),
    column("p.ip", uses("ip"), "text"),
    column("p.port", uses("port"), "int"),
    "p.username",
    "p.password",
    column("p.alive_protocols", all, "smallint"),
    column("p.country", uses("country"), "text"),
    column("p.estimated_type", uses("type"), "text"),
    column("p.anonymity_level", uses("anonymity"), "text"),
    column("p.response_time", uses("time"), "int"),
    column("p.alive", uses("alive"), "boolean"),
    column(`to_char(p.latest_check AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`, all, "text"),
    column("p.reputation_label", uses("reputation") || uses("reputation_label"), "text"),
    column("p.reputation_score", uses("reputation_score"), "real"),
    column(PROTOCOL_SQL, format.kind === "template" && format.template.fields.has("protocol"), "text"),
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

const NO_PROTOCOLS: string[] = [];

function toExportRow(raw: RawRow): ExportRow {
  const mask = raw[5];
  return {
    id: raw[0] ?? 0,
    ip: raw[1] ?? "",
    port: raw[2] ?? 0,
    username: raw[3],
    password: raw[4],
    protocols: mask === null || mask === 0 ? NO_PROTOCOLS : PROXY_PROTOCOLS.filter((_, bit) => (mask & (1 << bit)) !== 0),
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
 * Streams the user's matching proxies in id order through a server-side
 * cursor: memory holds one FETCH of rows, and writing waits for the socket
 * (backpressure), so a million-row export is as cheap in memory as ten.
 * Returns the number of rows written; stops early if the client goes away.
 */
export async function streamExport(
  pool: Pick<pg.Pool, "connect">,
  userId: number,
  filters: ProxyFilters,
  format: ExportFormat,
  target: ExportTarget,
): Promise<number> {
  const where = buildProxyWhere(userId, filters);
  const sql = `SELECT ${selectList(format).join(", ")} FROM proxies p WHERE ${where.text} ORDER BY p.id`;

  const out = target.stream;
  const client = await pool.connect();
  let written = 0;
  let broken = false;
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    await client.query(`DECLARE proxy_export NO SCROLL CURSOR FOR ${sql}`, where.params);
    target.begin();
    const write = async (text: string): Promise<void> => {
      if (!out.write(text)) await drained(out);
    };
    if (format.kind === "json") await write("[");
    if (format.kind === "csv") await write(`${EXPORT_COLUMNS.join(",")}\n`);
    for (;;) {
      if (out.destroyed || out.writableEnded) break;
      const { rows } = await client.query<RawRow>({ text: `FETCH ${FETCH_ROWS} FROM proxy_export`, rowMode: "array" });
      if (rows.length === 0) break;
      let chunk = "";
      for (const raw of rows) {
        const row = toExportRow(raw);
        if (format.kind === "template") chunk += `${format.template.render(row)}\n`;
        else if (format.kind === "csv") chunk += `${csvLine(row)}\n`;
        else chunk += `${written === 0 ? "\n" : ",\n"}${jsonObject(row)}`;
        written++;
      }
      await write(chunk);
    }
    if (format.kind === "json") await write(written === 0 ? "]\n" : "\n]\n");
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
