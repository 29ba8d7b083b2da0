import { proxyPageJson, ProxyPageJsonError } from "./proxy-page-json.js";
import { protocolsOfMask } from "./proxy-identity.js";

type Fields = [
  id: string,
  ip: string,
  port: string,
  mask: string | null,
  type: string,
  responseTime: string,
  country: string,
  anonymity: string,
  alive: string | null,
  latestCheck: string | null,
  label: string,
  score: string,
];

/** PostgreSQL's record_out: a value is quoted when empty or holding `"`, `\`, `(`, `)`, `,` or white space; `"` and `\` doubled. */
function recordText(fields: readonly (string | null)[]): string {
  const out = fields.map((value) => {
    if (value === null) return "";
    if (value !== "" && !/["\\(),\s]/.test(value)) return value;
    return `"${value.replace(/["\\]/g, (c) => c + c)}"`;
  });
  return `(${out.join(",")})`;
}

/** What the route sent before: JSON.stringify of toListItem's object for these column texts. */
function expected(rows: readonly Fields[], total: number): string {
  const proxies = rows.map(([id, ip, port, mask, type, responseTime, country, anonymity, alive, latestCheck, label, score]) => ({
    id: Number(id),
    ip,
    port: Number(port),
    protocols: protocolsOfMask(Number(mask) & 15),
    estimated_type: type,
    response_time: Number(responseTime),
    country,
    anonymity_level: anonymity,
    alive: alive === "t",
    latest_check: latestCheck,
    reputation: { overall: { kind: "overall", score: Number.parseFloat(score), label } },
  }));
  return JSON.stringify({ proxies, total });
}

const plain: Fields = ["7", "45.1.2.3", "8080", "5", "datacenter", "120", "US", "elite", "t", "2026-11-22T06:36:35.733Z", "good", "76.1"];

describe("proxyPageJson (the list page's body from row text)", () => {
  const check = (rows: Fields[], total = 1234): void => {
    const body = proxyPageJson(rows.length === 0 ? null : rows.map(recordText).join("\n"), total);
    expect(body.toString("utf8")).toBe(expected(rows, total));
    expect(JSON.parse(body.toString("utf8"))).toEqual(JSON.parse(expected(rows, total)));
  };

  it("writes plain rows byte for byte as JSON.stringify of the list items", () => {
    check([plain]);
    check([plain, ["8", "23.0.0.1", "1", "15", "residential", "0", "N/A", "N/A", "f", null, "unknown", "0"]], 1_000_000);
    check([], 0);
  });

  it("takes the general path for quoted fields, escapes and text beyond ASCII", () => {
    check([["9", "1.2.3.4", "80", "1", 'a "quoted" \\ type', "5", "ж, ü", "", "t", "2026-01-01T00:00:00.000Z", "x(y)", "1.5"]]);
    check([["10", "1.2.3.4", "80", "2", "tab\there", "5", "ctl\u0001", "new\nline", "f", null, "€", "2"]]);
    check([["11", "1.2.3.4", "80", "3", "mobile", "5", "DE", "anonymous", "t", null, "poor", "3"], plain]);
  });

  it("writes scores as JavaScript writes the parsed float", () => {
    for (const score of ["0", "-0", "0.5", "-0.25", "1e-05", "3.4028235e+38", "NaN", "Infinity", "-Infinity", "1.50", "00", "12", "-"]) {
      check([[...plain.slice(0, 11), score] as Fields]);
    }
  });

  it("writes a NULL flag as false and a NULL mask as no protocols, as the objects did", () => {
    check([["12", "1.2.3.4", "80", null, "mobile", "5", "DE", "anonymous", null, null, "poor", "3"]]);
  });

  it("reads the rows of the page's text apart only at newlines between records, not inside quoted values", () => {
    const tricky: Fields = ["13", "1.2.3.4", "80", "1", "a)\n(b", "5", '"\n', "x\\\n", "t", null, "\n", "4"];
    check([plain, tricky, plain]);
    check([tricky, tricky]);
    expect(proxyPageJson("", 5).toString()).toBe('{"proxies":[],"total":5}');
  });

  it("writes a NULL label or score as null, each in its place", () => {
    const nulls = (label: string | null, score: string | null): Fields => [...plain.slice(0, 10), label, score] as Fields;
    check([nulls(null, "1.5"), nulls("good", null), nulls(null, null), plain]);
  });

  it("reads a mask that is not plain digits as the objects did (Number(mask) & 15)", () => {
    for (const mask of ["17", "-1", "015", "x"]) check([[...plain.slice(0, 3), mask, ...plain.slice(4)] as Fields]);
  });

  it("writes long pages and long plain values byte for byte (the buffer grows past its first size)", () => {
    const long: Fields = ["99", "1.2.3.4", "80", "1", "t".repeat(5000), "5", "US", "elite", "f", null, "good", "2.5"];
    check([long, plain, long]);
    check(Array.from({ length: 2000 }, (_, i) => [String(i), `10.0.${i >> 8}.${i & 255}`, String(1 + i), String(i % 16), "isp", String(i * 3), "DE", "anonymous", i % 2 ? "t" : "f", i % 3 ? "2026-01-01T00:00:00.000Z" : null, "neutral", `${i}.25`] as Fields));
  });

  it("writes random rows as JSON.stringify does, whichever path each takes", () => {
    // Characters of plain rows, of quoted fields, JSON escapes and beyond ASCII; a fixed seed so a failure repeats.
    const alphabet = ['a', 'Z', '0', '9', '.', '-', ':', '_', '"', '\\', '(', ')', ',', ' ', '\t', '\n', '\u0001', '\u007f', 'é', '€', '😀'];
    let seed = 20261124;
    const random = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const text = (): string => Array.from({ length: random(6) }, () => alphabet[random(random(3) === 0 ? alphabet.length : 8)] ?? "").join("");
    for (let page = 0; page < 300; page++) {
      const rows = Array.from({ length: 1 + random(5) }, (_, i) => [
        String(page * 10 + i),
        random(4) === 0 ? text() : `1.2.3.${i}`,
        String(random(65536)),
        random(8) === 0 ? null : String(random(20)),
        text() || "isp",
        String(random(10000)),
        random(4) === 0 ? text() : "US",
        text() || "elite",
        random(8) === 0 ? null : random(2) ? "t" : "f",
        random(3) === 0 ? null : "2026-11-22T06:36:35.733Z",
        random(10) === 0 ? null : text() || "good",
        random(10) === 0 ? null : (["0", "1.5", "-0", "1e-05", "42"][random(5)] ?? "0"),
      ] as Fields);
      check(rows, page);
    }
  });

  it("refuses text that is not rows of the twelve fields", () => {
    expect(() => proxyPageJson("1,2", 0)).toThrow(ProxyPageJsonError);
    expect(() => proxyPageJson(recordText(plain.slice(0, 11)), 0)).toThrow(/too few/);
    expect(() => proxyPageJson(recordText([...plain, "x"]), 0)).toThrow(/too many/);
    expect(() => proxyPageJson(recordText(["x y", ...plain.slice(1, 11)]), 0)).toThrow(/11 fields/);
    expect(() => proxyPageJson(`${recordText(plain)} ${recordText(plain)}`, 0)).toThrow(/newline/);
    expect(() => proxyPageJson(`(1,"2`, 0)).toThrow(/unterminated/);
    expect(() => proxyPageJson(`(1,2,3`, 0)).toThrow(/unterminated/);
  });
});
