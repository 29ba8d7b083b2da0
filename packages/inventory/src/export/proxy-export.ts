import type { Writable } from "node:stream";
import pg from "pg";
import { buildProxyWhere, inlineSqlCondition, type ProxyFilters } from "../proxy-filter.js";
import { firstProtocolOfMaskSql, singleProtocolOfMaskSql } from "../proxy-identity.js";
import { allowLongStatement, CopyOutQuery, type CopyRowWriter } from "@roost/db";
import { COPY_EXPORT_SELECT, CopyExportWriter, CopyLineWriter } from "./proxy-export-copy.js";
import type { ExportFormat, LineTemplate, TemplatePiece, TemplatePlaceholder } from "./proxy-export-format.js";

/**
 * `protocol` of a template: a single alive protocol comes from the bitmask;
 * only proxies alive on several look up the fastest in proxy_protocol_status.
 */
const PROTOCOL_SQL = singleProtocolOfMaskSql(
  "p.alive_protocols",
  `CASE WHEN p.alive_protocols = 0 THEN COALESCE(p.scheme_hint, 'http') ELSE COALESCE(
      (SELECT s.protocol FROM proxy_protocol_status s WHERE s.proxy_id = p.id AND s.alive ORDER BY s.response_time, s.protocol LIMIT 1),
      ${firstProtocolOfMaskSql("p.alive_protocols")}) END`,
);

/**
 * `reputation_score` as JavaScript's String() writes it (the template's definition). PostgreSQL writes the same
 * shortest digits but uses exponent form below 1e-4 and from 1e6 on (JavaScript: below 1e-6, from 1e21 on) with a
 * two-digit exponent where JavaScript writes one; -0 is "0"; numeric's text of the exponent form is plain decimal.
 */
const SCORE_SQL = `(SELECT CASE
      WHEN p.reputation_score = 0 THEN '0'
      WHEN position('e' IN t) = 0 THEN t
      WHEN abs(t::numeric) >= 0.000001 AND abs(t::numeric) < 1e21 THEN t::numeric::text
      ELSE replace(t, 'e-0', 'e-')
    END FROM (SELECT p.reputation_score::text AS t) score)`;

/** Each placeholder's text, as ExportRow's field gives it (every column is NOT NULL but the scheme hint). */
const PLACEHOLDER_SQL: Record<TemplatePlaceholder, string> = {
  protocol: `(${PROTOCOL_SQL})`,
  ip: "p.ip",
  port: "p.port::text",
  username: "p.username",
  password: "p.password",
  country: "p.country",
  alive: "CASE WHEN p.alive THEN 'true' ELSE 'false' END",
  type: "p.estimated_type",
  time: "p.response_time::text",
  anonymity: "p.anonymity_level",
  reputation: "p.reputation_label",
  reputation_label: "p.reputation_label",
  reputation_score: SCORE_SQL,
};

/** Placeholders whose SQL is a subquery: worth computing once per row when a template repeats them. */
const COSTLY: readonly TemplatePlaceholder[] = ["protocol", "reputation_score"];

/**
 * A template's line as SQL (alias `p`), the same text LineTemplate.render gives; the export only undoes COPY's
 * escapes. `line` is the select expression, `lateral` follows `FROM proxies p`: a costly placeholder used more than
 * once is computed once per row in a LATERAL subquery (`OFFSET 0` stops the planner inlining it into every use).
 */
export function templateLineSql(template: LineTemplate): { line: string; lateral: string } {
  const repeated = COSTLY.filter((field) => template.full.filter((piece) => "field" in piece && piece.field === field).length > 1);
  const fieldSql = (field: TemplatePlaceholder): string => (repeated.includes(field) ? `v.${field}` : PLACEHOLDER_SQL[field]);
  const piecesSql = (pieces: readonly TemplatePiece[]): string =>
    pieces.length === 0 ? "''::text" : pieces.map((piece) => ("field" in piece ? fieldSql(piece.field) : `${pg.escapeLiteral(piece.literal)}::text`)).join(" || ");
  const full = piecesSql(template.full);
  const bare = piecesSql(template.bare);
  const lateral =
    repeated.length === 0 ? "" : ` CROSS JOIN LATERAL (SELECT ${repeated.map((field) => `${PLACEHOLDER_SQL[field]} AS ${field}`).join(", ")} OFFSET 0) v`;
  return { line: full === bare ? full : `CASE WHEN p.username = '' AND p.password = '' THEN ${bare} ELSE ${full} END`, lateral };
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
 * Streams the user's matching proxies in id order from one `COPY (SELECT ...) TO STDOUT` (one snapshot), read only
 * as the response takes it, so memory does not grow with the list. Returns the rows written. If the client goes away
 * the connection is left inside the COPY: its socket is destroyed and it is not returned to the pool.
 */
export async function streamExport(
  pool: Pick<pg.Pool, "connect">,
  userId: number,
  filters: ProxyFilters,
  format: ExportFormat,
  target: ExportTarget,
  /** Server and client deadline of the COPY, ms (DATABASE_LONG_STATEMENT_TIMEOUT_MS): an export may outlast the pool's. */
  { longStatementTimeoutMs }: { longStatementTimeoutMs?: number } = {},
): Promise<number> {
  const where = inlineSqlCondition(buildProxyWhere(userId, filters));
  const [{ line: select, lateral }, writer]: [{ line: string; lateral: string }, CopyRowWriter] =
    format.kind === "template"
      ? [templateLineSql(format.template), new CopyLineWriter()]
      : [{ line: COPY_EXPORT_SELECT, lateral: "" }, new CopyExportWriter(format.kind)];
  const sql = `COPY (SELECT ${select} FROM proxies p${lateral} WHERE ${where} ORDER BY p.id) TO STDOUT`;
  const out = target.stream;
  const client = await pool.connect();
  const copy = new CopyOutQuery(sql, writer);
  let complete = false;
  try {
    const long = await allowLongStatement(client, longStatementTimeoutMs);
    copy.query_timeout = long.queryTimeoutMs;
    client.query(copy);
    let begun = false;
    // Status and headers wait for the first rows (or the end): an error before them is still a JSON 500.
    const begin = async (): Promise<void> => {
      if (begun) return;
      begun = true;
      target.begin();
      await send(out, writer.begin());
    };
    for (let bytes = await copy.read(); bytes !== null; bytes = await copy.read()) {
      await begin();
      await send(out, bytes);
      if (gone(out)) return writer.rows;
    }
    await begin();
    await send(out, writer.end());
    await long.restore();
    complete = true;
    return writer.rows;
  } finally {
    if (!complete) copy.abandon();
    client.release(!complete);
  }
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
