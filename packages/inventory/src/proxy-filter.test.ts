import { buildProxyWhere, emptyFilters, filtersFromBulkRequest, parseProxyFilters, ProxyFilterError, inlineSqlCondition } from "./proxy-filter.js";

describe("parseProxyFilters", () => {
  it("reads every list parameter, repeated or comma-separated, normalising case", () => {
    expect(
      parseProxyFilters({
        search: " 1.2. ",
        status: "ALIVE",
        protocol: ["http", "SOCKS5,https"],
        country: ["us", "n/a"],
        type: "Datacenter",
        anonymity: ["elite", "n/a"],
        reputation: "good,poor",
        maxTimeout: "500",
        maxRetries: "0",
        page: "ignored",
      }),
    ).toEqual({
      search: "1.2.",
      status: "alive",
      protocols: ["http", "socks5", "https"],
      countries: ["US", "N/A"],
      types: ["datacenter"],
      anonymity: ["elite", "N/A"],
      reputation: ["good", "poor"],
      maxTimeoutMs: 500,
      maxRetries: 0,
    });
  });

  it("treats absent, empty and zero maxTimeout as no restriction", () => {
    expect(parseProxyFilters({})).toEqual({ ...emptyFilters(), status: undefined, maxRetries: undefined });
    expect(parseProxyFilters({ maxTimeout: "0", search: "  " }).maxTimeoutMs).toBeUndefined();
    expect(parseProxyFilters({ search: "  " }).search).toBeUndefined();
  });

  it.each([
    [{ status: "asleep" }],
    [{ status: ["alive", "dead"] }],
    [{ protocol: "ftp" }],
    [{ type: "cloud" }],
    [{ anonymity: "hidden" }],
    [{ reputation: "great" }],
    [{ maxTimeout: "1.5" }],
    [{ maxTimeout: "-1" }],
    [{ maxRetries: "x" }],
    [{ maxRetries: "99999999999" }],
    [{ search: ["a", "b"] }],
    [{ search: "x".repeat(201) }],
    [{ country: { nested: "US" } }],
    [{ country: "XYZ" }],
    [{ country: "United States" }],
    [{ country: "u" }],
    [{ country: "us,1" }],
    [{ country: "N/AA" }],
  ])("refuses %j", (query) => {
    expect(() => parseProxyFilters(query)).toThrow(ProxyFilterError);
  });
});

describe("buildProxyWhere", () => {
  it("always starts with the owner and numbers parameters from firstParam", () => {
    const where = buildProxyWhere(7, { ...emptyFilters(), status: "alive", protocols: ["http", "socks5"], countries: ["US"] }, "p", 3);
    expect(where.text).toBe("p.user_id = $3 AND p.alive AND (p.alive_protocols & $4::smallint) <> 0 AND p.country = ANY($5::text[])");
    expect(where.params).toEqual([7, 9, ["US"]]);
  });

  it("reads protocol with status=dead as 'not alive on one of them'", () => {
    const where = buildProxyWhere(1, { ...emptyFilters(), status: "dead", protocols: ["https"] });
    expect(where.text).toBe("p.user_id = $1 AND NOT p.alive AND (p.alive_protocols & $2::smallint) <> $3::smallint");
    expect(where.params).toEqual([1, 2, 2]);
  });

  it("turns the search box into IP prefix, ip:port, country and type alternatives", () => {
    expect(buildProxyWhere(1, { ...emptyFilters(), search: "1.2.3.4:80" }).text).toContain("(p.ip = $2 AND p.port = $3)");
    const prefix = buildProxyWhere(1, { ...emptyFilters(), search: "45.1" });
    expect(prefix.text).toBe("p.user_id = $1 AND (p.ip LIKE $2)");
    expect(prefix.params).toEqual([1, "45.1%"]);
    const word = buildProxyWhere(1, { ...emptyFilters(), search: "Res" });
    expect(word.params).toEqual([1, ["residential"]]);
    expect(buildProxyWhere(1, { ...emptyFilters(), search: "us" }).params).toEqual([1, "US"]);
    expect(buildProxyWhere(1, { ...emptyFilters(), search: "%_" }).text).toBe("p.user_id = $1 AND FALSE");
  });
});

describe("filtersFromBulkRequest", () => {
  it("applies protocol booleans and limits only with filter: true", () => {
    const request = { filter: false, socks4: true, maxTimeout: 100, maxRetries: 1, proxyStatus: "alive" as const, reputationLabels: ["good" as const], proxies: [3, 1, 3] };
    expect(filtersFromBulkRequest(request, { ids: true })).toEqual({ ...emptyFilters(), status: "alive", reputation: ["good"], ids: [3, 1] });
    expect(filtersFromBulkRequest({ ...request, filter: true }, { ids: false })).toEqual({
      ...emptyFilters(),
      status: "alive",
      reputation: ["good"],
      protocols: ["socks4"],
      maxTimeoutMs: 100,
      maxRetries: 1,
    });
  });

  it("reads none or all four protocols as no protocol restriction and proxyStatus all as none", () => {
    const all = filtersFromBulkRequest({ filter: true, http: true, https: true, socks4: true, socks5: true, proxyStatus: "all" }, { ids: true });
    expect(all).toEqual(emptyFilters());
  });
});

describe("inlineSqlCondition", () => {
  it("writes integers, quoted strings and arrays where the placeholders were", () => {
    expect(inlineSqlCondition({ text: "a = $1 AND b = ANY($2::int[]) AND c = ANY($3::text[]) AND d <= $10", params: [5, [1, -2], ["x", "y"], 0, 0, 0, 0, 0, 0, 7] })).toBe(
      "a = (5) AND b = ANY(ARRAY[(1),(-2)]::int[]) AND c = ANY(ARRAY['x','y']::text[]) AND d <= (7)",
    );
    expect(inlineSqlCondition({ text: "x = ANY($1::int[])", params: [[]] })).toBe("x = ANY(ARRAY[]::int[])");
  });

  it("quotes strings so they stay strings: quotes doubled, backslashes in an E'' literal, placeholders inside values left alone", () => {
    expect(inlineSqlCondition({ text: "a = $1 AND b = $2", params: ["it's $2", "c:\\dir"] })).toBe("a = 'it''s $2' AND b =  E'c:\\\\dir'");
  });

  it("refuses what it cannot write as a literal", () => {
    expect(() => inlineSqlCondition({ text: "a = $1", params: [1.5] })).toThrow(TypeError);
    expect(() => inlineSqlCondition({ text: "a = $1", params: [Number.MAX_SAFE_INTEGER + 1] })).toThrow(TypeError);
    expect(() => inlineSqlCondition({ text: "a = $1", params: [{ x: 1 }] })).toThrow(TypeError);
    expect(() => inlineSqlCondition({ text: "a = $1", params: [null] })).toThrow(TypeError);
    expect(() => inlineSqlCondition({ text: "a = $2", params: [1] })).toThrow(RangeError);
  });

  it("inlines every filter the export builds", () => {
    const filters = filtersFromBulkRequest(
      { filter: true, http: true, socks5: true, maxTimeout: 900, maxRetries: 1, proxyStatus: "alive", reputationLabels: ["good", "neutral"], proxies: [3, 4] },
      { ids: true },
    );
    const inlined = inlineSqlCondition(buildProxyWhere(42, filters));
    expect(inlined).not.toMatch(/\$\d/);
    expect(inlined).toContain("p.user_id = (42)");
    expect(inlined).toContain("ARRAY['good','neutral']::text[]");
    expect(inlined).toContain("ARRAY[(3),(4)]::int[]");
  });
});
