import { scanCommonLine, type CommonLine } from "@roost/net";
import { pageOfTree, tableLines } from "./extract-proxies.js";
import { commonLineHash, scanSimpleHtml, type PageText } from "./extract-proxies-simple-html.js";

/** Fixed pseudo-random choices, the same in every run. */
function chooser(seed: number): (n: number) => number {
  let state = seed >>> 0;
  return (n) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return (state >>> 8) % n;
  };
}

const PIECES = [
  "<table>", "</table>", "<tbody>", "</tbody>", "<tr>", "</tr>", "<td>", "</td>", "<th>", "</th>", "<td class=\"hm\">", "<TD>", "</TD>",
  "<p>", "</p>", "<b>", "</b>", "<a href='/x'>", "</a>", "<div>", "</div>", "<ul>", "<li>", "</li>", "</ul>", "<span>", "</span>", "<br>", "<br/>", "<img src=x>",
  "<script>var a='1.2.3.4:80'</script>", "<script><!--x--></script>", "<style>p{}</style>", "<noscript>5.5.5.5:80</noscript>", "<title>4.4.4.4:4</title>",
  "<template><p>6.6.6.6:81</p></template>", "<!-- 7.7.7.7:82 -->", "<!-->", "<svg><script>1.1.1.1:1</script></svg>", "<select><option>2.2.2.2:2</select>",
  "<textarea>3.3.3.3:3</textarea>", "<html>", "<body>", "</body>", "<head>", "<![CDATA[5.6.7.8:9]]>", "<h1>", "</h1>", "<h2>", "<form>", "</form>",
  "1.2.3.4", "8080", " ", "\n", "\r\n", "\r", "\t", "1.2.3.4:3128", "9.9.9.9 1080", "user:pw@8.8.8.8:8888", "socks5://4.4.4.4:1080",
  "&#49;.2.3.4:80", "&nbsp;", "&amp;", "&colon;", "\u00a0", ":", "80", "x", "< x", "a<b", "</ x>", "<td a=\"1\"b>",
];

const TEXTS = ["1.2.3.4", "8080", " ", "\n", "\r\n", "1.2.3.4:3128", "9.9.9.9 1080", "user:pw@8.8.8.8:8888", "&#49;.2.3.4:80", "&nbsp;", "&amp;", "x", "80", ":", "\u00a0"];
const LEAVES = ["<br>", "<img src=x alt=\"a > b\">", "<!-- 7.7.7.7:82 -->", "<script>var a='1.2.3.4:80'</script>", "<style>p{}</style>", "<noscript>5.5.5.5:80</noscript>", "<title>4.4.4.4:4</title>"];
const WRAPPERS = ["b", "span", "a", "div", "p", "h2", "em", "section", "custom-el"];

/** Well-nested content (tables, lists, wrappers, texts), with a piece that breaks the rules now and then. */
function content(choose: (n: number) => number, depth: number): string {
  let html = "";
  for (let count = choose(5); count >= 0; count -= 1) {
    const kind = choose(depth > 3 ? 3 : 7);
    if (kind === 0) html += TEXTS[choose(TEXTS.length)] ?? "";
    else if (kind === 1) html += LEAVES[choose(LEAVES.length)] ?? "";
    else if (kind === 2) html += choose(12) === 0 ? (PIECES[choose(PIECES.length)] ?? "") : (TEXTS[choose(TEXTS.length)] ?? "");
    else if (kind === 3 || kind === 4) {
      const name = WRAPPERS[choose(WRAPPERS.length)] ?? "b";
      html += `<${name}${choose(2) === 0 ? ' class="c"' : ""}>${content(choose, depth + 1)}</${choose(6) === 0 ? name.toUpperCase() : name}>`;
    } else if (kind === 5) {
      html += `<ul>${Array.from({ length: 1 + choose(3) }, () => `<li>${content(choose, depth + 1)}</li>`).join("\n")}</ul>`;
    } else {
      const rows = Array.from({ length: 1 + choose(4) }, () => {
        const cells = Array.from({ length: choose(5) }, () => `<${choose(5) === 0 ? "th" : "td"}>${choose(2) === 0 ? (TEXTS[choose(TEXTS.length)] ?? "") : content(choose, depth + 2)}</${"td"}>`);
        return `<tr>${cells.join(choose(2) === 0 ? "" : "\n ")}</tr>`;
      });
      html += choose(2) === 0 ? `<table><tbody>\n${rows.join("\n")}</tbody></table>` : `<table>${rows.join("")}</table>`;
    }
  }
  return html;
}

/** A page the scanner should often take: a document's frame around generated content. */
function page(choose: (n: number) => number): string {
  const body = content(choose, 0);
  const head = choose(4) === 0 ? "" : "<meta charset=utf-8><title>Proxies &amp; more</title><script>x()</script>";
  return choose(10) === 0 ? body : `<!DOCTYPE html>\n<html lang="en"><head>${head}</head>\n<body>${body}</body></html>\n`;
}

/**
 * The text pass's input as extraction reads it: the nodes' lines, trimmed, blank ones left out
 * (whitespace after `</body>`, which the tree appends to the body's last text, changes nothing there).
 */
const textLines = (texts: readonly string[]): string[] =>
  texts
    .join("\n")
    .split(/\r?\n|\r/)
    .map((line) => line.trim())
    .filter((line) => line.includes(":") || /\d\s+\d/.test(line));

/** Cells of a list site's table: plain ones the row reader takes, and ones that send their row to the tag reader. */
const CELLS = [
  "1.2.3.4", " 5.6.7.8 ", "\u00a09.9.9.9\u00a0", "10.0.0.1\n", "999.1.1.1", "1.2.3", "1.2.3.4.5", "01.002.3.4", "255.255.255.255", "256.1.1.1",
  "8080", " 3128 ", "0", "65535", "65536", "99999", "123456", "80\u00a0", "US", "elite proxy", "5 mins ago", "2 3", "n/a", "", " ", "1.5 s",
  "1.2.3.4:80", "a > b", "&nbsp;1.2.3.4", "1.2.3.4\r", "x\r\ny", "1.2.3.4 8080", "12:00", "<b>1.2.3.4</b>", "<!-- c -->80",
];
const CELL_TAGS = [["<td>", "</td>"], ["<td class=\"hm\">", "</td>"], ["<th>", "</th>"], ["<td nowrap data-x=\"a>b\">", "</td>"], ["<TD>", "</TD>"], ["<td >", "</td>"]] as const;

/** A document around one table of rows in a list site's shape, now and then a row the row reader does not take. */
function listPage(choose: (n: number) => number): string {
  const rows = Array.from({ length: 1 + choose(8) }, () => {
    const cells = Array.from({ length: choose(7) }, () => {
      const [open, close] = CELL_TAGS[choose(3) === 0 ? choose(CELL_TAGS.length) : choose(2)] ?? ["<td>", "</td>"];
      const text = choose(4) === 0 ? (CELLS[choose(CELLS.length)] ?? "") : (CELLS[choose(16)] ?? "");
      return `${open}${text}${close}`;
    });
    return `<tr${choose(4) === 0 ? ' class="odd"' : ""}>${cells.join(choose(3) === 0 ? "\n " : "")}</tr>`;
  });
  const table = `<table><thead><tr><th>IP</th><th>Port</th></tr></thead><tbody>\n${rows.join("\n")}\n</tbody></table>`;
  const wrapped = choose(5) === 0 ? `<table><tr><td>${table}</td><td>81</td></tr></table>` : choose(5) === 0 ? `<div>${table}21.22.23.24:80</div>` : table;
  return `<!DOCTYPE html>\n<html><head><title>List</title></head><body><p>Proxies 31.32.33.34:81</p>${wrapped}</body></html>\n`;
}

/** What extraction reads from a page: the table rule's lines and the text lines, and each line the row reader read with scanCommonLine's address and port. */
function readOf(page: PageText): { table: string[]; lines: string[] } {
  let pair = 0;
  const common: CommonLine = { ipNumber: 0, port: 0, username: "", password: "", scheme: null };
  for (const row of page.rows) {
    if (typeof row !== "string") continue;
    // A line the reader read is one scanCommonLine reads, with the same hash.
    const read = scanCommonLine(row, common);
    expect({ row, read, hash: page.pairKeys[pair] }).toEqual({ row, read: true, hash: commonLineHash(common.ipNumber, common.port) });
    pair += 1;
  }
  expect(pair).toBe(page.pairKeys.length);
  return { table: tableLines(page.rows), lines: textLines(page.texts) };
}

describe("scanSimpleHtml (the tree-free read of simple pages)", () => {
  it("reads a list site's page as cheerio's tree does", () => {
    const html = `<!DOCTYPE html><html><head><title>Free &amp; fresh</title><style>td{}</style></head><body>
      <nav><a href="/">Home</a></nav><p>Updated <b>now</b>, see 21.22.23.24:81 and <i>31.32.33.34:82</i> below.</p>
      <table class="t"><thead><tr><th>IP</th><th>Port</th></tr></thead><tbody>
      <tr><td>1.2.3.4</td><td>8080</td><td>US</td></tr>
      <tr><td> 5.6.7.8 </td><td>3128</td><td><table><tr><td>9.9.9.9</td><td>80</td></tr></table></td></tr>
      </tbody></table><script>var probe = "10.0.0.1:80";</script></body></html>`;
    const scanned = scanSimpleHtml(html);
    expect(scanned).not.toBeNull();
    expect(readOf(scanned as PageText)).toEqual(readOf(pageOfTree(html)));
    expect(tableLines(scanned?.rows ?? [])).toEqual(["1.2.3.4:8080", "5.6.7.8:3128", "9.9.9.9:80"]);
  });

  it("leaves to the tree every page whose tree does not follow its tags", () => {
    for (const html of [
      "<table><tr><td>1.2.3.4</td><td>80</td></tr></table>", // no html, head, body written
      "<html><head></head><body><table><tr><td>1.2.3.4<td>80</tr></table></body></html>", // a cell closed by the next
      "<html><head></head><body><table>1.2.3.4<tr><td>80</td></tr></table></body></html>", // text moved before the table
      "<html><head></head><body><p>1.2.3.4<div>80</div></p></body></html>", // a p closed by a block
      "<html><head></head><body>1.2.3.4</div>:80</body></html>", // an ignored end tag glues two texts
      "<html><head></head><body><select><div>1.2.3.4</div></select></body></html>",
      "<html><head>1.2.3.4:80</head><body></body></html>",
      "<html><head></head><body><script><!--<script>x</script>--></script></body></html>",
    ]) {
      expect(scanSimpleHtml(html)).toBeNull();
    }
  });

  it("reads the same rows and texts as cheerio's tree for every generated page it takes", () => {
    const choose = chooser(29);
    let taken = 0;
    for (let index = 0; index < 3000; index += 1) {
      const html = page(choose);
      const scanned = scanSimpleHtml(html);
      if (scanned === null) continue;
      taken += 1;
      expect({ html, ...readOf(scanned) }).toEqual({ html, ...readOf(pageOfTree(html)) });
    }
    // Enough of them are taken for the comparison to mean something.
    expect(taken).toBeGreaterThan(300);
  });

  it("reads list sites' tables, plain rows by the row reader and the rest by tags, as cheerio's tree does", () => {
    const choose = chooser(31);
    let plainPairs = 0;
    for (let index = 0; index < 3000; index += 1) {
      const html = listPage(choose);
      const scanned = scanSimpleHtml(html);
      if (scanned === null) continue;
      plainPairs += scanned.pairKeys.length;
      expect({ html, ...readOf(scanned) }).toEqual({ html, ...readOf(pageOfTree(html)) });
    }
    expect(plainPairs).toBeGreaterThan(300);
  });
});
