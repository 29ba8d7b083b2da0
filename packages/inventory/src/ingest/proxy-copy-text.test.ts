import { ProxyCopyText, type ProxyCopyRow } from "./proxy-copy-text.js";

const row = (overrides: Partial<ProxyCopyRow> = {}): ProxyCopyRow => ({
  ip: 0x01020304,
  port: 8080,
  username: "",
  password: "",
  schemeHint: null,
  country: "US",
  asn: null,
  estimatedType: "unknown",
  ...overrides,
});

describe("ProxyCopyText (COPY text rows of the upload)", () => {
  it("writes every column in COPY text format, the id as a zero-padded field filled in later", () => {
    const text = new ProxyCopyText(42);
    text.add(row());
    text.add(row({ ip: 0xff000001, port: 1, username: "u", password: "p:w", schemeHint: "socks5", country: "N/A", asn: 13335, estimatedType: "datacenter" }));
    expect(text.rows).toBe(2);
    expect(text.withIds([7, 2147483647]).toString()).toBe(
      "0000000007\t42\t1.2.3.4\t8080\t\t\t\\N\tUS\t\\N\tunknown\n" + "2147483647\t42\t255.0.0.1\t1\tu\tp:w\tsocks5\tN/A\t13335\tdatacenter\n",
    );
  });

  it("escapes backslash, tab, newline and carriage return, so a literal \\N stays text", () => {
    const text = new ProxyCopyText(1);
    text.add(row({ username: "a\\Nb", password: "t\tn\nr\r\\" }));
    expect(text.withIds([1]).toString()).toContain("\ta\\\\Nb\tt\\tn\\nr\\r\\\\\t");
  });

  it("writes a value that turns non-ASCII or special halfway through", () => {
    const text = new ProxyCopyText(1);
    text.add(row({ username: "pass-ж\t1", password: "abc\u0001d" }));
    expect(text.withIds([1]).toString("utf8")).toContain("\tpass-ж\\t1\tabc\u0001d\t");
  });

  it("writes UTF-8 and grows past its first guess for long credentials", () => {
    const text = new ProxyCopyText(1, 1);
    const long = "ж".repeat(255);
    for (let i = 0; i < 50; i++) text.add(row({ username: long, password: `${long}${i}` }));
    const lines = text.withIds(Array.from({ length: 50 }, (_, i) => i + 1)).toString("utf8").split("\n");
    expect(lines).toHaveLength(51);
    expect(lines[49]).toBe(`0000000050\t1\t1.2.3.4\t8080\t${long}\t${long}49\t\\N\tUS\t\\N\tunknown`);
  });

  it("fills ids again without leftovers and keeps only the rows asked for", () => {
    const text = new ProxyCopyText(3);
    for (let port = 1; port <= 4; port++) text.add(row({ port }));
    text.withIds([1111111111, 2, 3, 4]);
    expect(text.withIds([5, 6, 7, 8]).toString().split("\n")[0]).toMatch(/^0000000005\t/);
    const kept = text.filter((position) => position % 2 === 1);
    expect(kept.rows).toBe(2);
    expect(kept.withIds([10, 11]).toString()).toBe("0000000010\t3\t1.2.3.4\t2\t\t\t\\N\tUS\t\\N\tunknown\n0000000011\t3\t1.2.3.4\t4\t\t\t\\N\tUS\t\\N\tunknown\n");
  });

  it("refuses ids that are not int4 row ids or do not match the rows", () => {
    const text = new ProxyCopyText(1);
    text.add(row());
    expect(() => text.withIds([0])).toThrow(/out of range/);
    expect(() => text.withIds([2 ** 31])).toThrow(/out of range/);
    expect(() => text.withIds([1.5])).toThrow(/out of range/);
    expect(() => text.withIds([1, 2])).toThrow(/expected 1 ids/);
  });
});
