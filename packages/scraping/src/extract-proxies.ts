import { load } from "cheerio";
import { isIPv6 } from "node:net";
import { commonLineHash, scanSimpleHtml, type PageText } from "./extract-proxies-simple-html.js";
import { parseProxyLine, PROXY_SCHEMES, scanCommonLine, type CommonLine, type ProxyScheme } from "@roost/net";

/** What a fetched body looks like, from its Content-Type and first bytes. */
export type BodyKind = "json" | "html" | "text";

/** Most JSON nodes visited in one body, so a pathological document costs bounded time. */
const MAX_JSON_NODES = 2_000_000;
const MAX_JSON_DEPTH = 64;
const TOKEN_SEPARATORS = /[\s,;|"'<>()[\]{}]+/;
const PORT = /^\d{1,5}$/;
const DIGIT_BLANK_DIGIT = /\d\s+\d/;

export function bodyKind(contentType: string | undefined, text: string): BodyKind {
  const type = (contentType ?? "").toLowerCase();
  if (type.includes("json")) return "json";
  if (type.includes("html") || type.includes("xml")) return "html";
  const head = text.slice(0, 512).trimStart();
  if (head.startsWith("{") || head.startsWith("[")) return "json";
  if (/^<(?:!doctype|html|table|body|head|div|p)\b/i.test(head)) return "html";
  return "text";
}

/**
 * The proxy lines a source's body states, as upload lines for `ingest`
 * (which dedupes and counts them): text lines in every form the upload
 * parser accepts, HTML tables and text, JSON with ip/host and port fields.
 */
export function extractProxyLines(body: string, contentType?: string): string[] {
  const found = new LineSet();
  switch (bodyKind(contentType, body)) {
    case "json":
      if (!fromJson(body, found)) fromText(body, found);
      break;
    case "html":
      fromHtml(body, found);
      break;
    case "text":
      fromText(body, found);
      break;
  }
  return found.lines();
}

/**
 * Lines in first-seen order without repeats. Lines in the common forms (most
 * of a list) are looked up in an open-addressing table keyed by their address
 * and port, then compared as text, instead of a Set of strings: on a 5 MB list
 * the Set's hashing and growth cost more than reading the lines.
 */
class LineSet {
  readonly #lines: string[] = [];
  readonly #other = new Set<string>();
  /** Pairs of (hash, index into #lines plus one; 0 is empty): a probe reads one array. */
  #slots = new Int32Array(2048);
  #commonCount = 0;

  add(line: string): void {
    if (scanCommonLine(line, common)) {
      this.addCommon(line, common.ipNumber, common.port);
      return;
    }
    if (this.#other.has(line)) return;
    this.#other.add(line);
    this.#lines.push(line);
  }

  /** Room for `count` more common lines without growing the table on the way. */
  reserve(count: number): void {
    let size = this.#slots.length;
    while ((this.#commonCount + count) * 4 > size) size *= 2;
    if (size > this.#slots.length) this.#grow(size);
  }

  /** A line scanCommonLine just read into `common` (add takes the same path for it, so a text is in one table only). */
  addCommon(line: string, ipNumber: number, port: number): void {
    this.addHashed(line, commonLineHash(ipNumber, port));
  }

  /** A common line by its commonLineHash. */
  addHashed(line: string, hash: number): void {
    const slots = this.#slots;
    const mask = (slots.length >> 1) - 1;
    let slot = hash & mask;
    for (let entry = slots[2 * slot + 1] ?? 0; entry !== 0; entry = slots[2 * slot + 1] ?? 0) {
      if (slots[2 * slot] === hash && this.#lines[entry - 1] === line) return;
      slot = (slot + 1) & mask;
    }
    this.#lines.push(line);
    slots[2 * slot] = hash;
    slots[2 * slot + 1] = this.#lines.length;
    this.#commonCount += 1;
    if (this.#commonCount * 4 > slots.length) this.#grow();
  }

  lines(): string[] {
    return this.#lines;
  }

  #grow(size = this.#slots.length * 2): void {
    const old = this.#slots;
    const slots = new Int32Array(size);
    const mask = (slots.length >> 1) - 1;
    for (let index = 0; index < old.length; index += 2) {
      if (old[index + 1] === 0) continue;
      let slot = (old[index] ?? 0) & mask;
      while (slots[2 * slot + 1] !== 0) slot = (slot + 1) & mask;
      slots[2 * slot] = old[index] ?? 0;
      slots[2 * slot + 1] = old[index + 1] ?? 0;
    }
    this.#slots = slots;
  }
}

/**
 * A whole line in an upload form is kept as written (scheme and credentials
 * included); otherwise each token of the line is tried, so prose such as
 * `proxy 1.2.3.4:8080 (fast)` still yields its proxy. Lines end at LF, CRLF
 * or CR; sliced by hand, as a split would first build an array of every line.
 */
function fromText(text: string, found: LineSet): void {
  for (let start = 0; start < text.length; ) {
    let end = start;
    while (end < text.length && text.charCodeAt(end) !== 10 && text.charCodeAt(end) !== 13) end += 1;
    const line = text.slice(start, end).trim();
    start = text.charCodeAt(end) === 13 && text.charCodeAt(end + 1) === 10 ? end + 2 : end + 1;
    if (line === "" || !mayHoldProxy(line)) continue;
    if (offer(line, found)) continue;
    for (const token of line.split(TOKEN_SEPARATORS)) {
      if (token !== "" && token !== line && keeps(token)) found.add(token);
    }
  }
}

/** Adds `line` when the upload would read it (the common forms without the general parser: a list's hot loop). */
function offer(line: string, found: LineSet): boolean {
  if (scanCommonLine(line, common)) {
    found.addCommon(line, common.ipNumber, common.port);
    return true;
  }
  if (!keeps(line)) return false;
  found.add(line);
  return true;
}

/** scanCommonLine's output: the address and port key the line's dedupe; the line is kept as written. */
const common: CommonLine = { ipNumber: 0, port: 0, username: "", password: "", scheme: null };

/**
 * False for a line no form can read as a proxy: every form has a `:` except
 * `ip port`, whose address ends and port starts with a digit around blanks.
 */
function mayHoldProxy(line: string): boolean {
  return line.includes(":") || DIGIT_BLANK_DIGIT.test(line);
}

/** A line the upload accepts, or an IPv6 one it refuses and counts (as an upload would). */
function keeps(line: string): boolean {
  const verdict = parseProxyLine(line);
  return verdict.kind === "proxy" || (verdict.kind === "invalid" && verdict.reason === "invalidIpv4" && looksLikeIpv6Proxy(line));
}

function looksLikeIpv6Proxy(token: string): boolean {
  const bracket = /\[([0-9a-fA-F:.]+)\]:\d{1,5}$/.exec(token);
  return bracket !== null && isIPv6(bracket[1] ?? "");
}

function fromHtml(html: string, found: LineSet): void {
  const page = scanSimpleHtml(html) ?? pageOfTree(html);
  let pair = 0;
  found.reserve(page.pairKeys.length);
  for (const row of page.rows) {
    if (typeof row !== "string") {
      tableRule(row, (line) => offer(line, found));
      continue;
    }
    // A plain row's `ip:port`: what offer does with it, its hash read by the scanner.
    found.addHashed(row, page.pairKeys[pair] ?? 0);
    pair += 1;
  }
  // Every text node on its own, so adjacent elements never glue two tokens together.
  fromText(page.texts.join("\n"), found);
}

/** Tables: a cell holding an address followed by a cell holding a port, as `ip:port`. */
function tableRule(row: readonly string[], take: (line: string) => void): void {
  for (let index = 0; index + 1 < row.length; index += 1) {
    const cell = (row[index] ?? "").trim();
    const next = (row[index + 1] ?? "").trim();
    if (PORT.test(next) && isAddressCell(cell)) take(`${cell}:${next}`);
  }
}

/** The lines the table rule reads from a page's rows, in order (the readers' equivalence tests compare these). */
export function tableLines(rows: PageText["rows"]): string[] {
  const lines: string[] = [];
  for (const row of rows) {
    if (typeof row === "string") lines.push(row);
    else tableRule(row, (line) => lines.push(line));
  }
  return lines;
}

/** A page's rows and text nodes from cheerio's tree (any page scanSimpleHtml does not take). */
export function pageOfTree(html: string): PageText {
  const rows: DomNode[] = [];
  const texts: string[] = [];
  walkTree(load(html).root()[0] as DomNode, rows, texts);
  return {
    pairKeys: [],
    rows: rows.map((row) => (row.children ?? []).filter((child) => child.type === "tag" && (child.name === "td" || child.name === "th")).map(textOf)),
    texts: texts.filter((text) => !/^\s*$/.test(text)),
  };
}

/** The part of domhandler's node (cheerio's tree) the walks read. */
interface DomNode {
  type: string;
  name?: string;
  data?: string;
  children?: DomNode[];
}

/** Elements whose content is never the page's text. */
const SKIPPED = new Set(["script", "style", "noscript", "template"]);

const isElement = (node: DomNode): boolean => node.type === "tag" || node.type === "script" || node.type === "style";
const isSkipped = (node: DomNode): boolean => isElement(node) && SKIPPED.has(node.name ?? "");

/**
 * One walk of the tree instead of cheerio's API (its `.contents()` over every
 * element is quadratic in the page, and a selector and wrapper per row cost
 * more than the parse): the `tr` elements in document order, and each
 * element's text children, elements in document order (an element's own texts
 * before its descendants'), skipping scripts, styles, noscript and templates.
 */
function walkTree(root: DomNode, rows: DomNode[], texts: string[]): void {
  const stack: DomNode[] = [root];
  while (stack.length > 0) {
    const node = stack.pop() as DomNode;
    const children = node.children ?? [];
    if (isElement(node)) {
      if (node.name === "tr") rows.push(node);
      for (const child of children) if (child.type === "text") texts.push(child.data ?? "");
    }
    for (let index = children.length - 1; index >= 0; index -= 1) {
      const child = children[index] as DomNode;
      if (child.children !== undefined && !isSkipped(child)) stack.push(child);
    }
  }
}

/** A cell's text: its descendant text nodes in document order, skipped elements left out (as cheerio's `.text()` after removing them). */
function textOf(cell: DomNode): string {
  let text = "";
  const stack: DomNode[] = [...(cell.children ?? [])].reverse();
  while (stack.length > 0) {
    const node = stack.pop() as DomNode;
    if (node.type === "text") text += node.data ?? "";
    else if (node.children !== undefined && !isSkipped(node)) for (let index = node.children.length - 1; index >= 0; index -= 1) stack.push(node.children[index] as DomNode);
  }
  return text;
}

function isAddressCell(cell: string): boolean {
  return /^\d{1,3}(?:\.\d{1,3}){3}$/.test(cell);
}

/** False when the body is not JSON (then it is read as text). */
function fromJson(body: string, found: LineSet): boolean {
  let document: unknown;
  try {
    document = JSON.parse(body);
  } catch {
    return false;
  }
  let visited = 0;
  const visit = (value: unknown, depth: number): void => {
    visited += 1;
    if (visited > MAX_JSON_NODES || depth > MAX_JSON_DEPTH) return;
    if (typeof value === "string") {
      fromText(value, found);
    } else if (Array.isArray(value)) {
      for (const item of value) visit(item, depth + 1);
    } else if (isRecord(value)) {
      const line = proxyOfObject(value);
      if (line !== null) found.add(line);
      else for (const item of Object.values(value)) visit(item, depth + 1);
    }
  };
  visit(document, 0);
  return true;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function field(object: Record<string, unknown>, names: readonly string[]): string | null {
  for (const name of names) {
    const value = object[name];
    if (typeof value === "string" && value.trim() !== "") return value.trim();
    if (typeof value === "number" && Number.isInteger(value)) return String(value);
  }
  return null;
}

const HOST_FIELDS = ["ip", "host", "ip_address", "ipAddress", "address"] as const;
const PORT_FIELDS = ["port"] as const;
const USER_FIELDS = ["username", "user", "login"] as const;
const PASSWORD_FIELDS = ["password", "pass"] as const;
const SCHEME_FIELDS = ["protocol", "scheme", "type"] as const;

/** `{ip|host, port[, username, password, protocol]}` as an upload line; null when the object is not a proxy. */
function proxyOfObject(object: Record<string, unknown>): string | null {
  const host = field(object, HOST_FIELDS);
  const port = field(object, PORT_FIELDS);
  if (host === null || port === null || !PORT.test(port)) return null;
  const username = field(object, USER_FIELDS) ?? "";
  const password = field(object, PASSWORD_FIELDS) ?? "";
  const scheme = schemeOf(field(object, SCHEME_FIELDS) ?? field(object, ["protocols"]));
  const address = isIPv6(host) ? `[${host}]` : host;
  // A user name holding `:` or blanks cannot be written unambiguously: the proxy is dropped, not guessed.
  if (/[\s:@]/.test(username) || /\s/.test(password)) return null;
  const credentials = username === "" ? "" : `:${username}:${password}`;
  const line = `${scheme === null ? "" : `${scheme}://`}${address}:${port}${credentials}`;
  return keeps(line) ? line : null;
}

function schemeOf(value: string | null): ProxyScheme | null {
  if (value === null) return null;
  const name = value.toLowerCase().replace(/[^a-z0-9]/g, "");
  const aliases: Record<string, ProxyScheme> = { socks4a: "socks4", socks5h: "socks5" };
  const scheme = aliases[name] ?? name;
  return PROXY_SCHEMES.find((known) => known === scheme) ?? null;
}
