import type { Writable } from "node:stream";
import type pg from "pg";
import { buildProxyWhere, type ProxyFilters } from "./proxy-filter.js";
import { csvLine, EXPORT_COLUMNS, type ExportFormat, type ExportRow, type TemplatePlaceholder } from "./proxy-export-format.js";
import { PROXY_PROTOCOLS } from "./proxy.schema.js";

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

/**
 * The json format's object up to `"reputation_score":`, built by PostgreSQL:
 * the text `jsonObject` (JSON.stringify) gives, key for key. to_json escapes
 * text as JSON.stringify does; the score stays a number column so that it
 * prints as JavaScript prints it. Two columns per row instead of fourteen:
 * decoding the columns, not formatting them, was most of the gateway's
 * work, and PostgreSQL builds the next batch while the gateway writes this
 * one (docs/benchmarks.md).
 */
const PROTOCOLS_JSON_SQL = `(ARRAY[${Array.from({ length: 16 }, (_, mask) => `'${JSON.stringify(PROXY_PROTOCOLS.filter((_p, bit) => (mask & (1 << bit)) !== 0))}'`).join(", ")}])[(p.alive_protocols & 15) + 1]`;
const JSON_HEAD_SQL = `'{"id":' || p.id || ',"ip":' || to_json(p.ip)::text || ',"port":' || p.port
  || ',"username":' || to_json(p.username)::text || ',"password":' || to_json(p.password)::text
  || ',"protocols":' || ${PROTOCOLS_JSON_SQL} || ',"country":' || to_json(p.country)::text
  || ',"type":' || to_json(p.estimated_type)::text || ',"anonymity":' || to_json(p.anonymity_level)::text
  || ',"response_time":' || p.response_time || ',"alive":' || CASE WHEN p.alive THEN 'true' ELSE 'false' END
  || ',"latest_check":' || COALESCE(to_json(to_char(p.latest_check AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text, 'null')
  || ',"reputation_label":' || to_json(p.reputation_label)::text || ',"reputation_score":'`;

/** A row of the json export: the object's text up to the score, and the score. */
type JsonRow = [head: string, score: number];

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

/** Alive protocols per bitmask, made once: rows share these arrays (read-only). */
const PROTOCOLS_OF_MASK: readonly string[][] = Array.from({ length: 16 }, (_, mask) => PROXY_PROTOCOLS.filter((_p, bit) => (mask & (1 << bit)) !== 0));
const NO_PROTOCOLS: string[] = [];

function toExportRow(raw: RawRow): ExportRow {
  const mask = raw[5];
  return {
    id: raw[0] ?? 0,
    ip: raw[1] ?? "",
    port: raw[2] ?? 0,
    username: raw[3],
    password: raw[4],
    protocols: mask === null ? NO_PROTOCOLS : (PROTOCOLS_OF_MASK[mask & 15] ?? NO_PROTOCOLS),
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
  const columns = format.kind === "json" ? [JSON_HEAD_SQL, "p.reputation_score"] : selectList(format);
  const sql = `SELECT ${columns.join(", ")} FROM proxies p WHERE ${where.text} ORDER BY p.id`;

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
    /** Reads the cursor to its end, one chunk of text per FETCH; the next FETCH is on its way while a batch is formatted and written. */
    const pump = async <Row extends unknown[]>(line: (row: Row) => string): Promise<void> => {
      const fetch = (): Promise<pg.QueryResult<Row>> => client.query<Row>({ text: `FETCH ${FETCH_ROWS} FROM proxy_export`, rowMode: "array" });
      let next = fetch();
      for (;;) {
        const { rows } = await next;
        if (rows.length === 0 || out.destroyed || out.writableEnded) return;
        next = fetch();
        next.catch(() => undefined);
        let chunk = "";
        for (const row of rows) {
          chunk += line(row);
          written++;
        }
        await write(chunk);
      }
    };
    if (format.kind === "json") {
      await pump<JsonRow>(([head, score]) => `${written === 0 ? "\n" : ",\n"}${head}${JSON.stringify(score)}}`);
      await write(written === 0 ? "]\n" : "\n]\n");
    } else if (format.kind === "csv") {
      await pump<RawRow>((raw) => `${csvLine(toExportRow(raw))}\n`);
    } else {
      const { template } = format;
      await pump<RawRow>((raw) => `${template.render(toExportRow(raw))}\n`);
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
