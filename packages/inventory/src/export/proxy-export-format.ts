/**
 * Export formats (docs/proxies.md "Export"): a line template, `json` or
 * `csv`. Pure: rows in, text out.
 */

/** Template placeholders; each is replaced only as a whole word (`ip` never inside `zip`). */
export const TEMPLATE_PLACEHOLDERS = [
  "protocol",
  "ip",
  "port",
  "username",
  "password",
  "country",
  "alive",
  "type",
  "time",
  "anonymity",
  "reputation",
  "reputation_label",
  "reputation_score",
] as const;
export type TemplatePlaceholder = (typeof TEMPLATE_PLACEHOLDERS)[number];

export const DEFAULT_OUTPUT_FORMAT = "ip:port";

/** One exported proxy, as the export query returns it. */
export interface ExportRow {
  id: number;
  ip: string;
  port: number;
  username: string;
  password: string;
  /** Alive protocols at the latest check, in bit order. */
  protocols: string[];
  /** Fastest protocol alive at the latest check, else the scheme hint, else `http`. */
  protocol: string;
  country: string;
  type: string;
  anonymity: string;
  /** Milliseconds. */
  responseTime: number;
  alive: boolean;
  /** ISO 8601 or null. */
  latestCheck: string | null;
  reputationLabel: string;
  reputationScore: number;
}

/** Literal text, or a placeholder. */
export type TemplatePiece = { literal: string } | { field: TemplatePlaceholder };

const WORDS = /[A-Za-z0-9_]+|[^A-Za-z0-9_]+/g;
const isPlaceholder = (word: string): word is TemplatePlaceholder => (TEMPLATE_PLACEHOLDERS as readonly string[]).includes(word);

function valueOf(field: TemplatePlaceholder, row: ExportRow): string {
  switch (field) {
    case "protocol":
      return row.protocol;
    case "ip":
      return row.ip;
    case "port":
      return String(row.port);
    case "username":
      return row.username;
    case "password":
      return row.password;
    case "country":
      return row.country;
    case "alive":
      return row.alive ? "true" : "false";
    case "type":
      return row.type;
    case "time":
      return String(row.responseTime);
    case "anonymity":
      return row.anonymity;
    case "reputation":
    case "reputation_label":
      return row.reputationLabel;
    case "reputation_score":
      return String(row.reputationScore);
  }
}

const isField = (piece: TemplatePiece | undefined, field: TemplatePlaceholder): boolean => piece !== undefined && "field" in piece && piece.field === field;
const isLiteral = (piece: TemplatePiece | undefined, text: string): boolean => piece !== undefined && "literal" in piece && piece.literal === text;

/**
 * The template for proxies without credentials: `username:password@` goes
 * (as in `protocol://username:password@ip:port`), and so does a
 * `:username:password` pair (as in `ip:port:username:password`).
 */
function withoutCredentials(pieces: readonly TemplatePiece[]): TemplatePiece[] {
  const out: TemplatePiece[] = [];
  for (let i = 0; i < pieces.length; i++) {
    const at = pieces[i + 3];
    if (isField(pieces[i], "username") && isLiteral(pieces[i + 1], ":") && isField(pieces[i + 2], "password") && at && "literal" in at && at.literal.startsWith("@")) {
      if (at.literal.length > 1) out.push({ literal: at.literal.slice(1) });
      i += 3;
      continue;
    }
    if (isLiteral(pieces[i], ":") && isField(pieces[i + 1], "username") && isLiteral(pieces[i + 2], ":") && isField(pieces[i + 3], "password")) {
      i += 3;
      continue;
    }
    const piece = pieces[i];
    if (piece) out.push(piece);
  }
  return out;
}

function renderer(pieces: readonly TemplatePiece[]): (row: ExportRow) => string {
  return (row) => {
    let text = "";
    for (const piece of pieces) text += "literal" in piece ? piece.literal : valueOf(piece.field, row);
    return text;
  };
}

export interface LineTemplate {
  /** The line for proxies with credentials, and for those without (empty user name and password). */
  full: readonly TemplatePiece[];
  bare: readonly TemplatePiece[];
  /**
   * The line of one row. The export builds the same text in SQL
   * (proxy-export.service.ts, templateLineSql); this is its definition, and
   * the tests hold the SQL to it.
   */
  render(row: ExportRow): string;
}

export function compileTemplate(template: string): LineTemplate {
  const full: TemplatePiece[] = (template.match(WORDS) ?? []).map((word) => (isPlaceholder(word) ? { field: word } : { literal: word }));
  const bare = withoutCredentials(full);
  const renderFull = renderer(full);
  const renderBare = renderer(bare);
  return {
    full,
    bare,
    render: (row) => (row.username === "" && row.password === "" ? renderBare(row) : renderFull(row)),
  };
}

/** Columns of the json and csv formats, in order. */
export const EXPORT_COLUMNS = [
  "id",
  "ip",
  "port",
  "username",
  "password",
  "protocols",
  "country",
  "type",
  "anonymity",
  "response_time",
  "alive",
  "latest_check",
  "reputation_label",
  "reputation_score",
] as const;

/** The json format's object; the export builds the same text in SQL (proxy-export.service.ts, JSON_HEAD_SQL). */
export function jsonObject(row: ExportRow): string {
  return JSON.stringify({
    id: row.id,
    ip: row.ip,
    port: row.port,
    username: row.username,
    password: row.password,
    protocols: row.protocols,
    country: row.country,
    type: row.type,
    anonymity: row.anonymity,
    response_time: row.responseTime,
    alive: row.alive,
    latest_check: row.latestCheck,
    reputation_label: row.reputationLabel,
    reputation_score: row.reputationScore,
  });
}

const NEEDS_QUOTES = /[",\r\n]|^\s|\s$/;
/**
 * A cell a spreadsheet would run as a formula (CSV injection; scraped credentials may hold `=HYPERLINK(...)`)
 * gets a leading `'`, which spreadsheets show as text, and quotes. json and line templates keep values exactly.
 */
const FORMULA_START = /^[=+\-@\t\r]/;
export const csvField = (value: string): string => {
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return text !== value || NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

/** RFC 4180 line (CRLF-free; `protocols` joined with `;`). */
export function csvLine(row: ExportRow): string {
  return [
    String(row.id),
    row.ip,
    String(row.port),
    csvField(row.username),
    csvField(row.password),
    row.protocols.join(";"),
    csvField(row.country),
    csvField(row.type),
    csvField(row.anonymity),
    String(row.responseTime),
    row.alive ? "true" : "false",
    row.latestCheck ?? "",
    csvField(row.reputationLabel),
    String(row.reputationScore),
  ].join(",");
}

export type ExportFormat = { kind: "json" } | { kind: "csv" } | { kind: "template"; template: LineTemplate };

/** `json`, `csv` (any case) or a template; empty or absent means `ip:port`. */
export function parseOutputFormat(outputFormat: string | null | undefined): ExportFormat {
  const format = outputFormat?.trim() ?? "";
  if (format.toLowerCase() === "json") return { kind: "json" };
  if (format.toLowerCase() === "csv") return { kind: "csv" };
  return { kind: "template", template: compileTemplate(format === "" ? DEFAULT_OUTPUT_FORMAT : format) };
}
