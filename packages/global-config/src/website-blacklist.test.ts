import { defaultGlobalConfig, globalConfigSchema, type GlobalConfig } from "./global-config.schema.js";
import { findBlockedUrls, hasBlockedUrls } from "./blocked-urls.js";
import { isBlockedUrl, normalizeBlacklistEntry } from "./website-blacklist.js";

describe("isBlockedUrl", () => {
  it("blocks the host and every subdomain, nothing else", () => {
    const list = ["example.com"];
    expect(isBlockedUrl("http://example.com/x", list)).toBe(true);
    expect(isBlockedUrl("https://api.example.com/", list)).toBe(true);
    expect(isBlockedUrl("https://a.b.EXAMPLE.com./", list)).toBe(true);
    expect(isBlockedUrl("https://user:pw@example.com:8443/", list)).toBe(true);
    expect(isBlockedUrl("https://notexample.com/", list)).toBe(false);
    expect(isBlockedUrl("https://example.com.evil.net/", list)).toBe(false);
    expect(isBlockedUrl("https://example.com@evil.net/", list)).toBe(false);
    expect(isBlockedUrl("not a url", list)).toBe(false);
  });

  it("matches IPv4 entries exactly and IDNs by their punycode form", () => {
    expect(isBlockedUrl("http://1.2.3.4/", ["1.2.3.4"])).toBe(true);
    expect(isBlockedUrl("http://11.2.3.4/", ["2.3.4"])).toBe(false);
    expect(isBlockedUrl("http://shop.bücher.de/", ["bücher.de"])).toBe(true);
    expect(isBlockedUrl("http://xn--bcher-kva.de/", ["BÜCHER.de"])).toBe(true);
  });
});

describe("website_blacklist entries", () => {
  const parse = (entries: string[]) => globalConfigSchema.shape.website_blacklist.safeParse(entries);

  it("are stored in canonical form", () => {
    expect(normalizeBlacklistEntry("  *.Example.COM. ")).toBe("example.com");
    expect(parse(["*.Example.COM.", "bücher.de", "1.2.3.4"])).toEqual({
      success: true,
      data: ["example.com", "xn--bcher-kva.de", "1.2.3.4"],
    });
  });

  it("refuse what is not a host name", () => {
    for (const bad of ["", "https://example.com", "example.com/path", "a b.com", "a..b", "-bad.com", "*.*.x.com", "x.*.com"]) {
      expect({ bad, success: parse([bad]).success }).toEqual({ bad, success: false });
    }
  });
});

describe("findBlockedUrls", () => {
  it("reports each blocked URL under the field it came from", () => {
    const config: GlobalConfig = {
      ...defaultGlobalConfig,
      checker: {
        ...defaultGlobalConfig.checker,
        judges: [
          { url: "http://judge.bad.org/", regex: "default" },
          { url: "http://judge.good.org/", regex: "default" },
        ],
        ip_lookup: "https://ip.bad.org/",
      },
      scraper: { ...defaultGlobalConfig.scraper, scrape_sites: ["https://bad.org/list.txt", "https://good.org/list.txt"] },
      blacklist_sources: ["https://lists.bad.org/drop.txt"],
      website_blacklist: ["bad.org"],
    };
    const blocked = findBlockedUrls(config);
    expect(blocked).toEqual({
      judges: ["http://judge.bad.org/"],
      scrape_sites: ["https://bad.org/list.txt"],
      blacklist_sources: ["https://lists.bad.org/drop.txt"],
      ip_lookup: ["https://ip.bad.org/"],
    });
    expect(hasBlockedUrls(blocked)).toBe(true);
    expect(hasBlockedUrls(findBlockedUrls(defaultGlobalConfig))).toBe(false);
    expect(findBlockedUrls({ ...config, checker: { ...config.checker, ip_lookup: "" } }).ip_lookup).toEqual([]);
  });
});
