import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { protocolsOfMask } from "@roost/inventory";
import type pg from "pg";
import { generatedIp } from "./bench-database.js";
import type { LoopbackClient } from "./load.js";

/** Upload lines start past the seeded addresses, so none collides with the list user's by accident. */
const UPLOAD_OFFSET = 50_000_000;

interface UploadLine {
  ip: string;
  port: number;
  username: string;
  password: string;
  scheme: string | null;
}

/**
 * `count` lines in four of the accepted formats (plain, ip:port:user:pass,
 * scheme://, user:pass@ip:port), every one valid and distinct.
 */
export function uploadLines(count: number): string[] {
  const lines: string[] = [];
  for (let k = 0; k < count; k++) {
    const ip = generatedIp(UPLOAD_OFFSET + k);
    const port = 1024 + (k % 60000);
    switch (k % 4) {
      case 0:
        lines.push(`${ip}:${port}`);
        break;
      case 1:
        lines.push(`${ip}:${port}:u${k % 97}:p${k % 89}`);
        break;
      case 2:
        lines.push(`${k % 8 === 2 ? "socks5" : "http"}://${ip}:${port}`);
        break;
      default:
        lines.push(`u${k % 97}:p${k % 89}@${ip}:${port}`);
    }
  }
  return lines;
}

/** The reference's parser: just the four formats above (the API's accepts many more and validates each line). */
function parseLine(line: string): UploadLine {
  let rest = line;
  let scheme: string | null = null;
  const schemeAt = rest.indexOf("://");
  if (schemeAt > 0) {
    scheme = rest.slice(0, schemeAt);
    rest = rest.slice(schemeAt + 3);
  }
  let username = "";
  let password = "";
  const at = rest.indexOf("@");
  if (at > 0) {
    [username = "", password = ""] = rest.slice(0, at).split(":");
    rest = rest.slice(at + 1);
  }
  const parts = rest.split(":");
  if (parts.length === 4) [, , username = "", password = ""] = parts;
  return { ip: parts[0] ?? "", port: Number(parts[1]), username, password, scheme };
}

export function multipartBody(field: string, filename: string, content: string): { body: Buffer; contentType: string } {
  const boundary = `----roostbench${randomBytes(8).toString("hex")}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: text/plain\r\n\r\n`;
  const body = Buffer.concat([Buffer.from(head), Buffer.from(content), Buffer.from(`\r\n--${boundary}--\r\n`)]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

export interface BulkResult {
  available: boolean;
  note?: string;
  rows: number;
  ms: number;
}

/** POST /api/addProxies with the lines as one file, end to end (request to parsed response). */
export async function apiUpload(client: LoopbackClient, token: string, lines: string[]): Promise<BulkResult & { details?: Record<string, number> }> {
  const { body, contentType } = multipartBody("file", "proxies.txt", `${lines.join("\n")}\n`);
  const started = performance.now();
  const res = await client.request("POST", "/api/addProxies", { Authorization: `Bearer ${token}`, "Content-Type": contentType }, body);
  const ms = performance.now() - started;
  if (res.status === 404) return { available: false, note: "POST /api/addProxies answered 404", rows: 0, ms };
  if (res.status !== 200) return { available: false, note: `POST /api/addProxies answered ${res.status}: ${res.body.toString().slice(0, 200)}`, rows: 0, ms };
  const parsed = JSON.parse(res.body.toString()) as { proxyCount: number; details: Record<string, number> };
  return { available: true, rows: parsed.details.parsedCount ?? 0, ms, details: parsed.details };
}

/**
 * The same upload as raw SQL: parse the lines, insert them in 10,000-row
 * batches with unnest (ON CONFLICT DO NOTHING on the identity) in one
 * transaction. No validation, geo lookup or queueing: the database floor.
 */
export async function sqlUpload(pool: pg.Pool, userId: number, lines: string[]): Promise<BulkResult> {
  const started = performance.now();
  const parsed = lines.map(parseLine);
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    for (let start = 0; start < parsed.length; start += 10_000) {
      const batch = parsed.slice(start, start + 10_000);
      await client.query(
        `INSERT INTO proxies (user_id, ip, port, username, password, scheme_hint)
         SELECT $1, * FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[])
         ON CONFLICT (user_id, ip, port, username, password) DO NOTHING`,
        [userId, batch.map((l) => l.ip), batch.map((l) => l.port), batch.map((l) => l.username), batch.map((l) => l.password), batch.map((l) => l.scheme)],
      );
    }
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
  return { available: true, rows: parsed.length, ms: performance.now() - started };
}

/** The export formats the benchmark measures: the default line template, and the two whole-row formats. */
export type ExportBenchFormat = "ip:port" | "csv" | "json";

/**
 * Newlines that are not rows: csv has a header line; json is `[`, one object
 * a line, then `]` on a line of its own (docs/proxies.md "Export").
 */
const FRAME_NEWLINES: Record<ExportBenchFormat, number> = { "ip:port": 0, csv: 1, json: 2 };

/** POST /api/user/export (every proxy, in `format`), streamed and counted by newline. */
export async function apiExport(client: LoopbackClient, token: string, format: ExportBenchFormat = "ip:port"): Promise<BulkResult> {
  let newlines = 0;
  const started = performance.now();
  const status = await client.stream(
    "POST",
    "/api/user/export",
    { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    Buffer.from(format === "ip:port" ? "{}" : JSON.stringify({ outputFormat: format })),
    (chunk) => {
      for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) newlines++;
    },
  );
  const ms = performance.now() - started;
  if (status !== 200) return { available: false, note: `POST /api/user/export answered ${status}`, rows: 0, ms };
  return { available: true, rows: Math.max(0, newlines - FRAME_NEWLINES[format]), ms };
}

/** The columns of the csv and json exports, as a plain query reads them. */
const WHOLE_ROW_COLUMNS = `id, ip, port, username, password, alive_protocols, country, estimated_type, anonymity_level, response_time, alive,
  to_char(latest_check AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS latest_check, reputation_label, reputation_score`;
/** A csv cell the plain way: quoted when it holds a comma, quote or line break. */
const csvCell = (value: unknown): string => {
  const text = value === null ? "" : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
};

type WholeRow = [number, string, number, string, string, number, string, string, string, number, boolean, string | null, string, number];

/** How the plain client formats one row of each format. */
const SQL_LINE: Record<ExportBenchFormat, { columns: string; line: (row: unknown[]) => string }> = {
  "ip:port": { columns: "ip, port", line: (row) => `${String(row[0])}:${String(row[1])}\n` },
  csv: {
    columns: WHOLE_ROW_COLUMNS,
    line: (row) => {
      const r = row as WholeRow;
      return `${[r[0], r[1], r[2], r[3], r[4], protocolsOfMask(r[5]).join(";"), ...r.slice(6)].map(csvCell).join(",")}\n`;
    },
  },
  json: {
    columns: WHOLE_ROW_COLUMNS,
    line: (row) => {
      const r = row as WholeRow;
      const object = {
        id: r[0], ip: r[1], port: r[2], username: r[3], password: r[4], protocols: protocolsOfMask(r[5]), country: r[6], type: r[7],
        anonymity: r[8], response_time: r[9], alive: r[10], latest_check: r[11], reputation_label: r[12], reputation_score: r[13],
      };
      return `${JSON.stringify(object)}\n`;
    },
  },
};

/**
 * The same export as raw SQL: a server-side cursor in id order, 5,000 rows a
 * FETCH, formatted the plain way (string templates, an object and
 * JSON.stringify per json row, a quoting check per csv cell).
 */
export async function sqlExport(pool: pg.Pool, userId: number, format: ExportBenchFormat = "ip:port"): Promise<BulkResult> {
  const { columns, line } = SQL_LINE[format];
  const started = performance.now();
  const client = await pool.connect();
  let rows = 0;
  let bytes = 0;
  try {
    await client.query("BEGIN");
    await client.query(`DECLARE bench_export NO SCROLL CURSOR FOR SELECT ${columns} FROM proxies WHERE user_id = $1 ORDER BY id`, [userId]);
    for (;;) {
      const { rows: batch } = await client.query<unknown[]>({ text: "FETCH 5000 FROM bench_export", rowMode: "array" });
      if (batch.length === 0) break;
      let text = "";
      for (const row of batch) text += line(row);
      bytes += Buffer.byteLength(text);
      rows += batch.length;
    }
    await client.query("COMMIT");
  } finally {
    client.release();
  }
  return { available: bytes > 0 || rows === 0, rows, ms: performance.now() - started };
}
