import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { insertProxy, userIdOfToken, type ProxyFixture } from "../../test-support/proxy-fixtures.js";
import { postGraphql } from "../../test-support/graphql-client.js";

/**
 * Behaviours docs/graphql.md promises that no other test pinned down: the
 * 401 for a revoked token and before the body is read, and the proxies
 * page agreeing with REST on the filter fields graphql.int.test.ts leaves out.
 */

interface GraphqlBody {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions?: Record<string, unknown> }[];
}

interface Page {
  proxies: { id: number }[];
  total: number;
}

describe("docs/graphql.md claims", () => {
  let h: GatewayHarness;

  const gql = (query: string, variables: Record<string, unknown> | undefined, bearer: string | null) => postGraphql(h, query, variables, bearer);

  beforeAll(async () => {
    h = await startGatewayHarness();
    await h.register(); // the admin; the tests below use plain users
  });
  afterAll(async () => {
    await h.close();
  });

  describe("authentication", () => {
    it("answers 401 {error: 'Token revoked'} to a logged-out token, as the REST routes do", async () => {
      const { token } = await h.register();
      const before = await gql("{ viewer { role } }", undefined, token);
      expect([before.status, before.body]).toEqual([200, { data: { viewer: { role: "user" } } }]);

      const logout = await h.http.post("/api/logout").set("Authorization", `Bearer ${token}`);
      expect(logout.status).toBe(204);

      const rest = await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${token}`);
      expect([rest.status, rest.body]).toEqual([401, { error: "Token revoked" }]);
      for (const query of ["{ viewer { role } }", "{ proxyCount }", "mutation { updateUserSettings(input: { timeout: 5000 }) { timeout } }"]) {
        const res = await gql(query, undefined, token);
        expect([query, res.status, res.headers["content-type"], res.body]).toEqual([query, 401, expect.stringMatching(/^application\/json/), { error: "Token revoked" }]);
      }
    });

    it("answers 401, not 413, to a 2 MB body without a token: the token is checked before the body is read", async () => {
      // 2 MB is over API_JSON_MAX_BODY_BYTES (1 MiB by default).
      const body = JSON.stringify({ query: "{ viewer { role } }", variables: { pad: "x".repeat(2 * 1024 * 1024) } });
      expect(Buffer.byteLength(body)).toBeGreaterThan(2 * 1024 * 1024);
      const send = (bearer: string | null) => {
        const req = h.http.post("/api/graphql").set("Content-Type", "application/json");
        if (bearer !== null) req.set("Authorization", `Bearer ${bearer}`);
        return req.send(body);
      };

      const none = await send(null);
      expect([none.status, none.headers["content-type"], none.body]).toEqual([401, expect.stringMatching(/^application\/json/), { error: "Missing bearer token" }]);
      const invalid = await send("not-a-jwt");
      expect([invalid.status, invalid.body]).toEqual([401, { error: "Invalid token" }]);
      const { token } = await h.register();
      await h.http.post("/api/logout").set("Authorization", `Bearer ${token}`).expect(204);
      const revoked = await send(token);
      expect([revoked.status, revoked.body]).toEqual([401, { error: "Token revoked" }]);

      // With a valid token the same body is read, and is too large.
      const { token: valid } = await h.register();
      const tooLarge = await send(valid);
      expect([tooLarge.status, tooLarge.body]).toEqual([413, { error: expect.any(String) }]);
    });
  });

  describe("proxies(filter) against GET /api/getProxyPage/1", () => {
    let token: string;
    const ids: Record<string, number> = {};
    const fixtures: Record<string, ProxyFixture> = {
      p1: { ip: "8.8.8.1", port: 8080, country: "US", estimatedType: "datacenter", aliveOn: ["http"], anonymity: "elite", attempt: 0, responseTime: 100 },
      p2: { ip: "8.8.8.2", port: 1080, country: "DE", estimatedType: "residential", aliveOn: ["https", "socks5"], anonymity: "anonymous", attempt: 1, responseTime: 900 },
      p3: { ip: "8.8.9.3", port: 3128, country: "US", estimatedType: "mobile", aliveOn: ["socks4"], anonymity: "transparent", attempt: 2, responseTime: 2500 },
      p4: { ip: "9.9.9.4", port: 8000, country: "FR", estimatedType: "unknown" }, // never checked: dead, N/A, no attempt
      p5: { ip: "9.9.9.5", port: 3128, country: "N/A", estimatedType: "datacenter", latestCheck: new Date("2026-01-02T03:04:05.000Z") },
      p6: { ip: "8.8.8.6", port: 80, country: "GB", estimatedType: "residential", aliveOn: ["http", "socks4"], anonymity: "elite", attempt: 0, responseTime: 300 },
    };

    const pageQuery = `query Page($page: Int!, $pageSize: Int, $filter: ProxyFilter) {
      proxies(page: $page, pageSize: $pageSize, filter: $filter) { total proxies { id } }
    }`;

    beforeAll(async () => {
      ({ token } = await h.register());
      const userId = await userIdOfToken(h, token);
      for (const [name, fixture] of Object.entries(fixtures)) ids[name] = await insertProxy(h.db.pool, userId, fixture);
      // Another user's rows with the same addresses must stay out of both answers.
      const other = await h.register();
      const otherId = await userIdOfToken(h, other.token);
      for (const fixture of Object.values(fixtures)) await insertProxy(h.db.pool, otherId, fixture);
    });

    it("gives the same ids and total for search, protocol, type, anonymity and maxRetries", async () => {
      const cases: [Record<string, unknown>, string, string[]][] = [
        // [GraphQL filter, REST query, expected rows]
        [{ search: "8.8.8" }, "search=8.8.8", ["p1", "p2", "p6"]],
        [{ search: "8.8.8.2:1080" }, "search=8.8.8.2:1080", ["p2"]],
        [{ search: "resid" }, "search=resid", ["p2", "p6"]],
        [{ search: "de" }, "search=de", ["p2"]],
        [{ search: "  9.9 " }, `search=${encodeURIComponent("  9.9 ")}`, ["p4", "p5"]],
        [{ search: "nothing-like-this" }, "search=nothing-like-this", []],
        [{ protocol: ["socks4"] }, "protocol=socks4", ["p3", "p6"]],
        [{ protocol: ["http", "socks5"] }, "protocol=http&protocol=socks5", ["p1", "p2", "p6"]],
        [{ protocol: ["HTTPS"] }, "protocol=HTTPS", ["p2"]],
        [{ type: ["datacenter"] }, "type=datacenter", ["p1", "p5"]],
        [{ type: ["mobile", "unknown"] }, "type=mobile&type=unknown", ["p3", "p4"]],
        [{ anonymity: ["N/A"] }, "anonymity=N/A", ["p4", "p5"]],
        [{ anonymity: ["elite", "transparent"] }, "anonymity=elite,transparent", ["p1", "p3", "p6"]],
        [{ maxRetries: 0 }, "maxRetries=0", ["p1", "p6"]],
        [{ maxRetries: 1 }, "maxRetries=1", ["p1", "p2", "p6"]],
        [{ maxRetries: 2 }, "maxRetries=2", ["p1", "p2", "p3", "p6"]],
        [
          { search: "8.8", protocol: ["http", "socks4"], type: ["residential"], anonymity: ["elite"], maxRetries: 0 },
          "search=8.8&protocol=http,socks4&type=residential&anonymity=elite&maxRetries=0",
          ["p6"],
        ],
        [{ search: "8.8.", type: ["datacenter", "mobile"], maxRetries: 1 }, "search=8.8.&type=datacenter&type=mobile&maxRetries=1", ["p1"]],
        [{ type: ["mobile"], maxRetries: 1 }, "type=mobile&maxRetries=1", []],
      ];
      for (const [filter, query, names] of cases) {
        const want = names.map((name) => ids[name]);
        const viaGraphql = await gql(pageQuery, { page: 1, pageSize: 100, filter }, token);
        expect([query, viaGraphql.status, (viaGraphql.body as GraphqlBody).errors]).toEqual([query, 200, undefined]);
        const page = (viaGraphql.body as GraphqlBody).data?.proxies as Page;
        const viaRest = await h.http.get(`/api/getProxyPage/1?pageSize=100&${query}`).set("Authorization", `Bearer ${token}`);
        expect([query, viaRest.status]).toEqual([query, 200]);
        const rest = viaRest.body as Page;
        expect([query, page.proxies.map((p) => p.id), page.total]).toEqual([query, want, want.length]);
        expect([query, rest.proxies.map((p) => p.id), rest.total]).toEqual([query, want, want.length]);
      }
    });

    it("pages those filters alike: page 2 of size 1 and the true total", async () => {
      const filter = { search: "8.8", protocol: ["http", "socks4"], anonymity: ["elite", "transparent"] };
      const viaGraphql = await gql(pageQuery, { page: 2, pageSize: 1, filter }, token);
      const page = (viaGraphql.body as GraphqlBody).data?.proxies as Page;
      const viaRest = await h.http
        .get("/api/getProxyPage/2?pageSize=1&search=8.8&protocol=http&protocol=socks4&anonymity=elite&anonymity=transparent")
        .set("Authorization", `Bearer ${token}`);
      const rest = viaRest.body as Page;
      expect({ ids: page.proxies.map((p) => p.id), total: page.total }).toEqual({ ids: [ids.p3], total: 3 });
      expect({ ids: rest.proxies.map((p) => p.id), total: rest.total }).toEqual({ ids: [ids.p3], total: 3 });
    });

    it("refuses the same bad values with the REST message", async () => {
      for (const [filter, query] of [
        [{ protocol: ["ftp"] }, "protocol=ftp"],
        [{ type: ["cloud"] }, "type=cloud"],
        [{ anonymity: ["secret"] }, "anonymity=secret"],
        [{ maxRetries: -1 }, "maxRetries=-1"],
        [{ search: "1".repeat(201) }, `search=${"1".repeat(201)}`],
      ] as const) {
        const rest = await h.http.get(`/api/getProxyPage/1?${query}`).set("Authorization", `Bearer ${token}`);
        expect([query, rest.status]).toEqual([query, 400]);
        const message = (rest.body as { error: string }).error;
        const res = await gql(pageQuery, { page: 1, filter }, token);
        expect([query, res.status, (res.body as GraphqlBody).errors]).toEqual([
          query,
          200,
          [expect.objectContaining({ message, extensions: { code: "BAD_USER_INPUT" } })],
        ]);
      }
    });
  });
});
