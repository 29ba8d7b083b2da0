import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { bearer } from "../../test-support/token-claims.js";
import { PROXY_COLUMNS, SCRAPE_SOURCE_LIST_COLUMNS } from "./user-settings.schema.js";

/** The contract's field names, exactly (note `UseHttpsForSocks`). */
const FIELDS = [
  "http_protocol",
  "https_protocol",
  "socks4_protocol",
  "socks5_protocol",
  "timeout",
  "retries",
  "UseHttpsForSocks",
  "transport_protocol",
  "auto_remove_failing_proxies",
  "auto_remove_failure_threshold",
  "judges",
  "scraping_sources",
  "proxy_list_columns",
  "scrape_source_proxy_columns",
  "scrape_source_list_columns",
].sort();

describe("user settings", () => {
  let h: GatewayHarness;
  beforeEach(async () => {
    h = await startGatewayHarness();
  });
  afterEach(async () => {
    await h?.close();
  });

  const get = async (token: string) => {
    const res = await h.http.get("/api/user/settings").set(bearer(token));
    expect(res.status).toBe(200);
    return res.body as Record<string, unknown>;
  };
  const post = (token: string, body: unknown) => h.http.post("/api/user/settings").set(bearer(token)).send(body as object);

  it("gives a new user the defaults of the global config, under the contract's field names", async () => {
    const { token } = await h.register();
    const settings = await get(token);
    expect(Object.keys(settings).sort()).toEqual(FIELDS);
    expect(settings).toEqual({
      http_protocol: true,
      https_protocol: true,
      socks4_protocol: true,
      socks5_protocol: true,
      timeout: 5000,
      retries: 1,
      UseHttpsForSocks: true,
      transport_protocol: "tcp",
      auto_remove_failing_proxies: false,
      auto_remove_failure_threshold: 3,
      judges: [{ url: "http://azenv.net/", regex: "default" }, { url: "https://pool.proxyspace.pro/judge.php", regex: "default" }],
      scraping_sources: [],
      proxy_list_columns: [...PROXY_COLUMNS],
      scrape_source_proxy_columns: [...PROXY_COLUMNS],
      scrape_source_list_columns: [...SCRAPE_SOURCE_LIST_COLUMNS],
    });
  });

  it("takes the defaults from the global config as it is at registration", async () => {
    const judges = [
      { url: "http://judge-one.example/", regex: "default" },
      { url: "https://judge-two.example/azenv", regex: "REMOTE_ADDR" },
    ];
    const updated = await h.deps.globalConfig.update({
      protocols: { socks4: false },
      checker: { timeout_ms: 7000, retries: 4, use_https_for_socks: false, judges },
    });
    expect(updated.ok).toBe(true);
    const { token } = await h.register();
    const settings = await get(token);
    expect(settings).toMatchObject({
      http_protocol: true,
      https_protocol: true,
      socks4_protocol: false,
      socks5_protocol: true,
      timeout: 7000,
      retries: 4,
      UseHttpsForSocks: false,
      judges,
    });
  });

  it("POST merges a subset: missing keys keep their values", async () => {
    const { token } = await h.register();
    const before = await get(token);
    const res = await post(token, { timeout: 9000, UseHttpsForSocks: false });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: expect.any(String) });
    expect(await get(token)).toEqual({ ...before, timeout: 9000, UseHttpsForSocks: false });
  });

  it("POST of the full object round-trips", async () => {
    const { token } = await h.register();
    const full = {
      http_protocol: false,
      https_protocol: true,
      socks4_protocol: false,
      socks5_protocol: true,
      timeout: 100,
      retries: 10,
      UseHttpsForSocks: false,
      transport_protocol: "tcp",
      auto_remove_failing_proxies: true,
      auto_remove_failure_threshold: 100,
      judges: [
        { url: "http://judge-b.example/", regex: "default" },
        { url: "http://judge-a.example/", regex: "X-Forwarded" },
      ],
      scraping_sources: [],
      proxy_list_columns: ["ip", "port", "country"],
      scrape_source_proxy_columns: [],
      scrape_source_list_columns: ["url", "proxy_count"],
    };
    expect((await post(token, full)).status).toBe(200);
    expect(await get(token)).toEqual(full);
  });

  it("ignores unknown keys, mis-cased names and scraping_sources", async () => {
    const { token } = await h.register();
    const before = await get(token);
    const res = await post(token, {
      retries: 2,
      unknown_setting: 1,
      useHttpsForSocks: false, // not the contract's spelling
      scraping_sources: ["http://lists.example/proxies.txt"],
    });
    expect(res.status).toBe(200);
    expect(await get(token)).toEqual({ ...before, retries: 2 });
    expect(await h.db.prisma.scrapeSource.count()).toBe(0);
  });

  it.each([
    ["timeout as a string", { timeout: "5000" }],
    ["timeout below 100", { timeout: 99 }],
    ["timeout above 60000", { timeout: 60001 }],
    ["timeout not an integer", { timeout: 1000.5 }],
    ["retries below 0", { retries: -1 }],
    ["retries above 10", { retries: 11 }],
    ["a protocol flag as a string", { http_protocol: "true" }],
    ["UseHttpsForSocks as a number", { UseHttpsForSocks: 1 }],
    ["a null value", { socks5_protocol: null }],
    ["auto_remove_failure_threshold 0", { auto_remove_failure_threshold: 0 }],
    ["auto_remove_failure_threshold 101", { auto_remove_failure_threshold: 101 }],
    ["auto_remove_failing_proxies as a string", { auto_remove_failing_proxies: "false" }],
    ["transport_protocol udp", { transport_protocol: "udp" }],
    ["transport_protocol quic", { transport_protocol: "quic" }],
    ["transport_protocol TCP", { transport_protocol: "TCP" }],
    ["judges not an array", { judges: "http://judge.example/" }],
    ["a judge without a URL", { judges: [{ regex: "default" }] }],
    ["a judge with a bad URL", { judges: [{ url: "not a url", regex: "default" }] }],
    ["a judge with a bad regex", { judges: [{ url: "http://judge.example/", regex: "(" }] }],
    ["a judge regex RE2 cannot run (lookahead)", { judges: [{ url: "http://judge.example/", regex: "(?=REMOTE)" }] }],
    ["a judge regex RE2 cannot run (backreference)", { judges: [{ url: "http://judge.example/", regex: "(a)\\1" }] }],
    ["repeated judges", { judges: [{ url: "http://judge.example/", regex: "default" }, { url: "http://judge.example/", regex: "default" }] }],
    ["an unknown column", { proxy_list_columns: ["ip", "password"] }],
    ["a repeated column", { scrape_source_list_columns: ["url", "url"] }],
    ["a valid key next to a bad one", { timeout: 9000, retries: 99 }],
    ["an array body", [{ timeout: 9000 }]],
  ])("refuses %s with 400 {error} and changes nothing", async (_case, body) => {
    const { token } = await h.register();
    const before = await get(token);
    const res = await post(token, body);
    expect(res.status).toBe(400);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.body).toEqual({ error: expect.any(String) });
    expect(await get(token)).toEqual(before);
  });

  it("says why transport_protocol is refused", async () => {
    const { token } = await h.register();
    const res = await post(token, { transport_protocol: "udp" });
    expect(res.body.error).toMatch(/transport_protocol.*tcp/);
  });

  it.each([
    ["on the blacklisted host", "http://blocked.example/azenv"],
    ["on a subdomain of it", "https://judge.eu.blocked.example/"],
  ])("refuses a judge %s with 400 {error, blocked_judges, website_blacklist} and saves nothing", async (_case, blockedUrl) => {
    const admin = await h.register();
    await h.http.post("/api/saveSettings").set(bearer(admin.token)).send({ website_blacklist: ["Blocked.Example", "other.example"] }).expect(200);
    const { token } = await h.register();
    const before = await get(token);
    const res = await post(token, {
      timeout: 9000,
      judges: [
        { url: "http://judge.good.example/", regex: "default" },
        { url: blockedUrl, regex: "default" },
        { url: "http://notblocked.example/", regex: "default" }, // a look-alike host, not a subdomain
      ],
    });
    expect(res.status).toBe(400);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.body).toEqual({ error: expect.any(String), blocked_judges: [blockedUrl], website_blacklist: ["blocked.example", "other.example"] });
    expect(await get(token)).toEqual(before);
  });

  it("keeps users apart: A's POST never changes B's settings", async () => {
    const a = await h.register();
    const b = await h.register();
    const bBefore = await get(b.token);
    expect(
      (
        await post(a.token, {
          timeout: 12345,
          retries: 7,
          http_protocol: false,
          judges: [{ url: "http://only-for-a.example/", regex: "default" }],
          proxy_list_columns: ["ip"],
        })
      ).status,
    ).toBe(200);
    expect(await get(b.token)).toEqual(bBefore);
    expect(await get(a.token)).toMatchObject({ timeout: 12345, retries: 7, http_protocol: false, judges: [{ url: "http://only-for-a.example/", regex: "default" }] });
    // And the other way round.
    expect((await post(b.token, { judges: [] })).status).toBe(200);
    expect((await get(a.token)).judges).toEqual([{ url: "http://only-for-a.example/", regex: "default" }]);
    expect((await get(b.token)).judges).toEqual([]);
  });
});
