import { load } from "cheerio";

/** What extraction reads from a page: each `tr`'s `td`/`th` texts (untrimmed), and the text nodes in cheerio's walk order. */
export interface PageText {
  /** Rows in document order; of plain rows (readPlainRows) only the table rule's `ip:port` lines, already read. */
  rows: (string[] | string)[];
  /** For each `ip:port` line in rows, in order, the dedupe hash of what scanCommonLine reads from it (commonLineHash). */
  pairKeys: number[];
  /** Text nodes, whitespace-only ones left out (they hold no proxy). */
  texts: string[];
}

/*
 * A page read straight from its tags, without a tree, when it keeps to a
 * subset where HTML's tree construction adds, moves and merges nothing that
 * extraction reads: html, head and body written out, every element closed by
 * its own end tag, tables made of table/tbody/thead/tfoot, tr and td/th with
 * nothing else between them, no p left open around a block, no nested links
 * or forms, no foreign (svg, math), select, template or frame content. Any
 * other page, and anything unexpected, is null and goes to cheerio
 * (extractProxyLines): a proxy list site's page reads in a fraction of the
 * time a tree takes, every other page exactly as before.
 */

const HTML_SPACE = /^[\t\n\f\r ]*$/;
const JS_SPACE = /^\s*$/;
const START_TAG = /<[a-zA-Z][a-zA-Z0-9-]*(?:[\t\n\f\r ]+[^\t\n\f\r "'>/=<]+(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:"[^"]*"|'[^']*'|[^\t\n\f\r "'=<>`]+))?)*[\t\n\f\r ]*\/?>/y;
const END_TAG = /<\/([a-zA-Z][a-zA-Z0-9-]*)[\t\n\f\r ]*>/y;
const DOCTYPE = /<!doctype[^<>]*>/iy;

const VOID = new Set(["area", "base", "basefont", "bgsound", "br", "embed", "hr", "img", "input", "keygen", "link", "meta", "param", "source", "track", "wbr"]);
/** Content skipped to its end tag: never the page's text (extractProxyLines drops these elements). */
const RAW = new Set(["script", "style", "noscript"]);
/** Elements whose parsing this reader does not model. */
const REFUSED = new Set([
  "template", "svg", "math", "select", "option", "optgroup", "datalist", "textarea", "xmp", "iframe", "noembed", "noframes", "plaintext",
  "frameset", "frame", "image", "isindex", "caption", "colgroup", "col", "rb", "rp", "rt", "rtc", "menuitem", "button",
]);
/** Start tags that close an open p. */
const CLOSES_P = new Set([
  "address", "article", "aside", "blockquote", "center", "details", "dialog", "dir", "div", "dl", "fieldset", "figcaption", "figure", "footer", "header",
  "hgroup", "main", "menu", "nav", "ol", "p", "search", "section", "summary", "ul", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "listing", "form",
  "plaintext", "table", "hr", "xmp", "li", "dd", "dt",
]);
const HEAD_CONTENT = new Set(["meta", "link", "base", "title", "script", "style", "noscript"]);
const TABLE_PARTS = new Set(["table", "tbody", "thead", "tfoot", "tr"]);
const HEADINGS = new Set(["h1", "h2", "h3", "h4", "h5", "h6"]);
/** Open elements counted: p (a block closes it), and a, nobr and form, of which a second one would close or be dropped. */
type Counted = "p" | "a" | "nobr" | "form";

interface Open {
  name: string;
  /** Document order of the element. */
  order: number;
  counted: boolean;
  /** The row a tr collects, the cell a td/th of a row fills. */
  row?: string[];
  cell?: { row: string[]; index: number };
}

/*
 * Runs of plain table rows, read by one regex match per row instead of tag by
 * tag (a list site's table is nearly all of its page). A plain row is `<tr>`
 * and `<td>`/`<th>` cells with lowercase names, simple attributes and blanks
 * between, each cell closed by its own end tag and holding only text without
 * `<`, `>`, `&`, CR, `:` or a digit, blanks and a digit: such a cell's text can
 * never be a text line extraction reads (every form has a `:` or a digit,
 * blanks and a digit), so only the table rule reads the row. The match also
 * finds the row's first address cell followed by a port cell (the cells before
 * it taken one at a time) and keeps the cells after that pair, from the first
 * with a dot, for any further pair.
 */
const BLANKS = "[\\t\\n\\f\\r ]*";
const ATTRIBUTES = `(?:[\\t\\n\\f\\r ]+[a-z][a-z0-9-]*(?:="[^"<>]*")?)*`;
const cellText = (also: string): string => `[^<>&\\r:\\d${also}]*(?:\\d+(?!\\s*\\d)[^<>&\\r:\\d${also}]*)*`;
const cell = (text: string): string => `${BLANKS}(?:<td${ATTRIBUTES}>${text}</td>|<th${ATTRIBUTES}>${text}</th>)`;
const CELL = cell(cellText(""));
/** Blanks as trim takes them, but CR (a plain cell holds none): an address or port cell is a plain cell, so the first pair is the first the row holds. */
const TRIMMED = "[^\\S\\r]*";
const ADDRESS = `${TRIMMED}(\\d{1,3}(?:\\.\\d{1,3}){3})${TRIMMED}`;
const PORT = `${TRIMMED}(\\d{1,5})${TRIMMED}`;
const UNDOTTED_CELL = cell(cellText("."));
const DOTTED_CELL = cell(`${cellText(".")}\\.${cellText("")}`);
/**
 * Captures: the address (1 or 2), the port (3 or 4), the cells after them from
 * the first one with a dot (5). Each part of a row is read one way only, and at
 * most 64 cells before the pair and after it, so a row that is not plain costs
 * a bounded number of tries before the tag reader takes it.
 */
const PLAIN_ROW = new RegExp(
  `${BLANKS}<tr${ATTRIBUTES}>(?:${CELL}){0,64}?` +
    `(?:${BLANKS}(?:<td${ATTRIBUTES}>${ADDRESS}</td>|<th${ATTRIBUTES}>${ADDRESS}</th>)${BLANKS}(?:<td${ATTRIBUTES}>${PORT}</td>|<th${ATTRIBUTES}>${PORT}</th>)` +
    `(?:${UNDOTTED_CELL}){0,64}(${DOTTED_CELL}(?:${CELL}){0,64})?)?${BLANKS}</tr>`,
  "y",
);
/** An address and a port in two adjacent cells of plain cells, each its cell's whole text (a plain cell's text holds no `>`). */
const CELL_PAIR = />\s*(\d{1,3}(?:\.\d{1,3}){3})\s*<\/t[dh]>[\t\n\f\r ]*<t[dh][^>]*>\s*(\d{1,5})\s*<\/t[dh]>/g;

/**
 * The end of the plain rows starting at `start` (start when there are none),
 * each address cell followed by a port cell pushed to `rows` as its `ip:port`
 * line and to `pairKeys` as its address and port: all the table rule reads of
 * those rows.
 */
function readPlainRows(html: string, start: number, rows: PageText["rows"], pairKeys: number[]): number {
  let end = start;
  PLAIN_ROW.lastIndex = start;
  for (let match = PLAIN_ROW.exec(html); match !== null; match = PLAIN_ROW.exec(html)) {
    end = PLAIN_ROW.lastIndex;
    const ip = match[1] ?? match[2];
    if (ip === undefined) continue;
    pushPair(ip, match[3] ?? match[4] ?? "", rows, pairKeys);
    // Another pair needs an address, hence a dot: the cells from the first with one.
    const rest = match[5] ?? "";
    if (rest === "") continue;
    CELL_PAIR.lastIndex = 0;
    for (let more = CELL_PAIR.exec(rest); more !== null; more = CELL_PAIR.exec(rest)) pushPair(more[1] ?? "", more[2] ?? "", rows, pairKeys);
  }
  return end;
}

/**
 * The pair's line to rows and its dedupe hash to pairKeys, the address and
 * port read here from the two short captures as scanCommonLine reads them
 * from the line (which would first copy the joined rope). A pair that is not
 * a proxy (an octet over 255, port 0 or over 65535) goes to rows as a
 * two-cell row, for the table rule to offer and drop as before.
 */
function pushPair(ip: string, port: string, rows: PageText["rows"], pairKeys: number[]): void {
  let portNumber = 0;
  for (let index = 0; index < port.length; index += 1) portNumber = portNumber * 10 + port.charCodeAt(index) - 48;
  const ipNumber = portNumber >= 1 && portNumber <= 65535 ? dottedQuad(ip) : -1;
  if (ipNumber === -1) {
    rows.push([ip, port]);
    return;
  }
  rows.push(`${ip}:${port}`);
  pairKeys.push(commonLineHash(ipNumber, portNumber));
}

/** The first-seen dedupe's hash of a common line's address and port (extractProxyLines' LineSet). */
export function commonLineHash(ipNumber: number, port: number): number {
  const hash = Math.imul((ipNumber | 0) ^ Math.imul(port, 0x9e3779b1), 0x85ebca6b);
  return hash ^ (hash >>> 15);
}

/** `a.b.c.d` (1-3 digits each, as CELL_PAIR matched) as scanCommonLine's number; -1 when an octet is over 255. */
function dottedQuad(ip: string): number {
  let value = 0;
  let octet = 0;
  for (let index = 0; index < ip.length; index += 1) {
    const c = ip.charCodeAt(index);
    if (c === 46 /* . */) {
      if (octet > 255) return -1;
      value = value * 256 + octet;
      octet = 0;
    } else {
      octet = octet * 10 + (c - 48);
    }
  }
  return octet > 255 ? -1 : value * 256 + octet;
}

/** `td`, `tr` and `th` as constants (a table page's most frequent tags), without a slice to lowercase and hash. */
function tableTag(first: number, second: number): string | undefined {
  if ((first | 32) !== 116 /* t */) return undefined;
  const c = second | 32;
  return c === 100 ? "td" : c === 114 ? "tr" : c === 104 ? "th" : undefined;
}

export function scanSimpleHtml(html: string): PageText | null {
  if (html.includes("\u0000")) return null;
  const rows: PageText["rows"] = [];
  const pairKeys: number[] = [];
  const texts: string[] = [];
  const textOrder: number[] = [];
  const stack: Open[] = [];
  const openCells: { row: string[]; index: number }[] = [];
  const counts: Record<Counted, number> = { p: 0, a: 0, nobr: 0, form: 0 };
  let order = 0;
  let phase: "start" | "html" | "head" | "afterHead" | "body" | "afterBody" | "afterHtml" = "start";
  let pos = 0;

  /** A run of text between tags; false when the tree would not keep it where it stands. `title` is the text of a title element. */
  const text = (raw: string, title = false): boolean => {
    if (raw === "") return true;
    const top = stack[stack.length - 1];
    if (top === undefined || (!title && phase !== "body")) return HTML_SPACE.test(raw);
    let value = raw.includes("\r") ? raw.replace(/\r\n?/g, "\n") : raw;
    // Between a table's parts only blanks stay put (a table in a cell adds them to the cell's text).
    if (TABLE_PARTS.has(top.name) && !title) {
      if (!HTML_SPACE.test(raw)) return false;
      for (const cell of openCells) cell.row[cell.index] += value;
      return true;
    }
    if (value.includes("&")) value = load(value, null, false).root().text();
    for (const cell of openCells) cell.row[cell.index] += value;
    if (value.charCodeAt(0) > 32 ? value.charCodeAt(0) !== 160 || !JS_SPACE.test(value) : !JS_SPACE.test(value)) {
      texts.push(value);
      textOrder.push(top.order);
    }
    return true;
  };
  const push = (name: string): Open => {
    const counted = name in counts;
    const open: Open = { name, order: order++, counted };
    stack.push(open);
    if (counted) counts[name as Counted] += 1;
    return open;
  };

  while (pos < html.length) {
    const lt = html.indexOf("<", pos);
    if (!text(html.slice(pos, lt === -1 ? html.length : lt))) return null;
    if (lt === -1) break;
    const next = html.charCodeAt(lt + 1);
    if (next === 33 /* ! */) {
      if (html.startsWith("<!--", lt)) {
        const end = html.indexOf("-->", lt + 4);
        const early = html.indexOf("--!>", lt + 4);
        if (end === -1 || html.startsWith(">", lt + 4) || html.startsWith("->", lt + 4) || (early !== -1 && early < end)) return null;
        pos = end + 3;
        continue;
      }
      DOCTYPE.lastIndex = lt;
      if (phase !== "start" || order > 0 || !DOCTYPE.test(html)) return null;
      pos = DOCTYPE.lastIndex;
      continue;
    }
    if (next === 47 /* / */) {
      const top = stack[stack.length - 1];
      if (top === undefined) return null;
      // `</name>` as written most of the time; the pattern for case and blanks.
      if (html.startsWith(top.name, lt + 2) && html.charCodeAt(lt + 2 + top.name.length) === 62 /* > */) {
        pos = lt + 3 + top.name.length;
      } else {
        END_TAG.lastIndex = lt;
        const match = END_TAG.exec(html);
        if (match === null || match[1]?.toLowerCase() !== top.name) return null;
        pos = END_TAG.lastIndex;
      }
      stack.pop();
      if (top.counted) counts[top.name as Counted] -= 1;
      if (top.cell !== undefined) openCells.pop();
      if (top.name === "head") phase = "afterHead";
      else if (top.name === "body") phase = "afterBody";
      else if (top.name === "html") phase = "afterHtml";
      continue;
    }
    const top = stack[stack.length - 1];
    if (next === 116 /* t */ && html.charCodeAt(lt + 2) === 114 /* r */ && openCells.length === 0 && top !== undefined && top.name !== "tr" && TABLE_PARTS.has(top.name)) {
      const end = readPlainRows(html, lt, rows, pairKeys);
      if (end > lt) {
        order += 1;
        pos = end;
        continue;
      }
    }
    let nameEnd = lt + 1;
    for (let c = html.charCodeAt(nameEnd); (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || c === 45; c = html.charCodeAt(++nameEnd));
    if (nameEnd === lt + 1 || html.charCodeAt(lt + 1) <= 57) return null;
    const name = nameEnd === lt + 3 ? tableTag(html.charCodeAt(lt + 1), html.charCodeAt(lt + 2)) ?? html.slice(lt + 1, nameEnd).toLowerCase() : html.slice(lt + 1, nameEnd).toLowerCase();
    if (REFUSED.has(name)) return null;
    // `<name>` as written most of the time; the pattern for attributes.
    if (html.charCodeAt(nameEnd) === 62 /* > */) {
      pos = nameEnd + 1;
    } else {
      START_TAG.lastIndex = lt;
      if (!START_TAG.test(html)) return null;
      pos = START_TAG.lastIndex;
    }
    if (name === "html") {
      if (phase !== "start" || order > 0) return null;
      phase = "html";
      push(name);
      continue;
    }
    if (name === "head" || name === "body") {
      if (top?.name !== "html" || phase !== (name === "head" ? "html" : "afterHead")) return null;
      phase = name;
      push(name);
      continue;
    }
    if (phase === "head" ? !HEAD_CONTENT.has(name) || top?.name !== "head" : phase !== "body") return null;
    if (RAW.has(name) || name === "title") {
      // In a table outside a cell, only script and style stay where they stand.
      if (top !== undefined && TABLE_PARTS.has(top.name) && name !== "script" && name !== "style") return null;
      const close = new RegExp(`</${name}[\\t\\n\\f\\r />]`, "ig");
      close.lastIndex = pos;
      const found = close.exec(html);
      if (found === null) return null;
      const end = new RegExp(`</${name}[\\t\\n\\f\\r ]*>`, "iy");
      end.lastIndex = found.index;
      if (!end.test(html)) return null;
      const content = html.slice(pos, found.index);
      if (name === "script" && content.includes("<!--")) return null;
      if (name === "title") {
        push(name);
        if (!text(content, true)) return null;
        stack.pop();
      }
      pos = end.lastIndex;
      continue;
    }
    if (top === undefined) return null;
    // Inside a table but outside a cell, only the table's own parts.
    if (TABLE_PARTS.has(top.name)) {
      const fits = top.name === "tr" ? name === "td" || name === "th" : top.name === "table" ? name === "tr" || name === "tbody" || name === "thead" || name === "tfoot" : name === "tr";
      if (!fits) return null;
    } else if (name === "td" || name === "th" || name === "tr" || name === "tbody" || name === "thead" || name === "tfoot") {
      return null;
    }
    if (CLOSES_P.has(name) && counts.p > 0) return null;
    if (name in counts && counts[name as Counted] > 0) return null;
    if (HEADINGS.has(name) && HEADINGS.has(top.name)) return null;
    if (name === "li" && !["ul", "ol", "menu"].includes(top.name)) return null;
    if ((name === "dd" || name === "dt") && top.name !== "dl") return null;
    if (VOID.has(name)) {
      order += 1;
      continue;
    }
    const open = push(name);
    if (name === "tr") {
      open.row = [];
      rows.push(open.row);
    } else if ((name === "td" || name === "th") && top.row !== undefined) {
      open.cell = { row: top.row, index: top.row.length };
      top.row.push("");
      openCells.push(open.cell);
    }
  }
  if (phase !== "body" && phase !== "afterBody" && phase !== "afterHtml") return null;
  // cheerio's walk gives an element's own texts before its descendants': the page order unless text follows a child element.
  let sorted = true;
  for (let index = 1; index < textOrder.length && sorted; index += 1) sorted = (textOrder[index] ?? 0) >= (textOrder[index - 1] ?? 0);
  if (sorted) return { rows, pairKeys, texts };
  const byOrder = texts.map((value, index) => ({ value, order: textOrder[index] ?? 0 }));
  byOrder.sort((a, b) => a.order - b.order);
  return { rows, pairKeys, texts: byOrder.map((entry) => entry.value) };
}
