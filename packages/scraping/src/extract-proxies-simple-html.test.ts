import { pageOfTree } from "./extract-proxies.js";
import { scanSimpleHtml } from "./extract-proxies-simple-html.js";

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
    .filter((line) => line !== "");

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
    expect(scanned?.rows).toEqual(pageOfTree(html).rows);
    expect(textLines(scanned?.texts ?? [])).toEqual(textLines(pageOfTree(html).texts));
    expect(scanned?.rows).toEqual([["IP", "Port"], ["1.2.3.4", "8080", "US"], [" 5.6.7.8 ", "3128", "9.9.9.980"], ["9.9.9.9", "80"]]);
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
      const tree = pageOfTree(html);
      expect({ html, rows: scanned.rows, lines: textLines(scanned.texts) }).toEqual({ html, rows: tree.rows, lines: textLines(tree.texts) });
    }
    // Enough of them are taken for the comparison to mean something.
    expect(taken).toBeGreaterThan(300);
  });
});
