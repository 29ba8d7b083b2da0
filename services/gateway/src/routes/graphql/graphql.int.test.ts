import { Lexer, Source, TokenKind, parse } from "graphql";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { countFields, MAX_QUERY_FIELDS, MAX_QUERY_TOKENS } from "./graphql.limits.js";
import { postGraphql } from "../../test-support/graphql-client.js";
import { NUL_MESSAGE } from "../../http/nul-guard.js";

/** Tokens as graphql-js's parser counts them for `maxTokens` (commas and comments are not tokens). */
function countTokens(query: string): number {
  const lexer = new Lexer(new Source(query));
  let tokens = 0;
  while (lexer.advance().kind !== TokenKind.EOF) tokens++;
  return tokens;
}

interface GraphqlBody {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions?: Record<string, unknown> }[];
}

describe("POST /api/graphql", () => {
  let h: GatewayHarness;
  let token: string;
  let userId: number;

  const gql = (query: string, variables?: Record<string, unknown>, bearer: string | null = token) => postGraphql(h, query, variables, bearer);

  beforeAll(async () => {
    h = await startGatewayHarness();
    token = (await h.register()).token;
    const me = await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${token}`);
    userId = (me.body as { user_id: number }).user_id;
  });
  afterAll(async () => {
    await h.close();
  });

  it("answers 401 {error}, not GraphQL errors, without a valid token", async () => {
    for (const bearer of [null, "not-a-jwt"]) {
      const res = await gql("{ viewer { user_id } }", undefined, bearer);
      expect(res.status).toBe(401);
      expect(res.headers["content-type"]).toMatch(/application\/json/);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
  });

  it("reads and updates settings with the REST rules, and both faces agree", async () => {
    const fields = "timeout retries UseHttpsForSocks http_protocol judges { url regex } proxy_list_columns";
    const read = await gql(`{ viewer { user_id role settings { ${fields} } } }`);
    expect(read.status).toBe(200);
    const rest = await h.http.get("/api/user/settings").set("Authorization", `Bearer ${token}`);
    const viewer = (read.body as GraphqlBody).data?.viewer as { user_id: number; role: string; settings: Record<string, unknown> };
    expect(viewer.user_id).toBe(userId);
    expect(viewer.role).toBe("admin");
    for (const key of ["timeout", "retries", "UseHttpsForSocks", "http_protocol", "judges", "proxy_list_columns"]) {
      expect(viewer.settings[key]).toEqual((rest.body as Record<string, unknown>)[key]);
    }

    const mutation = `mutation Save($input: UserSettingsInput!) { updateUserSettings(input: $input) { ${fields} } }`;
    const saved = await gql(mutation, {
      input: { timeout: 7000, retries: 3, judges: [{ url: "http://judge.example/", regex: "default" }], proxy_list_columns: ["ip", "port"] },
    });
    expect(saved.status).toBe(200);
    expect((saved.body as GraphqlBody).errors).toBeUndefined();
    expect((saved.body as GraphqlBody).data?.updateUserSettings).toMatchObject({
      timeout: 7000,
      retries: 3,
      UseHttpsForSocks: viewer.settings.UseHttpsForSocks,
      judges: [{ url: "http://judge.example/", regex: "default" }],
      proxy_list_columns: ["ip", "port"],
    });
    const after = await h.http.get("/api/user/settings").set("Authorization", `Bearer ${token}`);
    expect(after.body).toMatchObject({ timeout: 7000, retries: 3, judges: [{ url: "http://judge.example/", regex: "default" }] });

    // Out of range: a GraphQL error with BAD_USER_INPUT and nothing changed.
    const invalid = await gql(mutation, { input: { timeout: 50, retries: 1 } });
    expect(invalid.status).toBe(200);
    const body = invalid.body as GraphqlBody;
    expect(body.data).toBeNull();
    expect(body.errors).toEqual([
      expect.objectContaining({ message: expect.stringContaining("timeout"), extensions: { code: "BAD_USER_INPUT" } }),
    ]);
    const unchanged = await h.http.get("/api/user/settings").set("Authorization", `Bearer ${token}`);
    expect(unchanged.body).toMatchObject({ timeout: 7000, retries: 3 });

    // A wrong type never reaches the resolver: GraphQL's own variable validation.
    const wrongType = await gql(mutation, { input: { timeout: "fast" } });
    expect(wrongType.status).toBe(400);
    expect((wrongType.body as GraphqlBody).errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
  });

  it("serves the dashboard of the caller only", async () => {
    const other = await h.register();
    const otherId = (await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${other.token}`)).body.user_id as number;
    await h.db.pool.query(
      `INSERT INTO proxies (user_id, ip, port, country, reputation_label, reputation_score)
       VALUES ($1, '5.5.5.5', 80, 'US', 'good', 70), ($1, '5.5.5.6', 80, 'DE', 'poor', 5), ($2, '6.6.6.6', 80, 'JP', 'good', 99)`,
      [userId, otherId],
    );
    await h.db.pool.query(`INSERT INTO user_daily_stats (user_id, day, checks, scraped) VALUES ($1, current_date, 12, 3), ($2, current_date, 500, 500)`, [
      userId,
      otherId,
    ]);
    const res = await gql(`{ dashboard {
      total_checks total_scraped total_checks_week total_scraped_week
      reputation_breakdown { good neutral poor unknown }
      country_breakdown { country count }
      judge_valid_proxies { judge_url elite_proxies }
      top_reputation_proxy { ip port score label }
    } }`);
    expect(res.status).toBe(200);
    const rest = await h.http.get("/api/getDashboardInfo").set("Authorization", `Bearer ${token}`);
    expect((res.body as GraphqlBody).data?.dashboard).toEqual({
      total_checks: 12,
      total_scraped: 3,
      total_checks_week: 12,
      total_scraped_week: 3,
      reputation_breakdown: { good: 1, neutral: 0, poor: 1, unknown: 0 },
      country_breakdown: [
        { country: "DE", count: 1 },
        { country: "US", count: 1 },
      ],
      judge_valid_proxies: [],
      top_reputation_proxy: { ip: "5.5.5.5", port: 80, score: 70, label: "good" },
    });
    // The REST route gives the same numbers (it also carries proxy_id).
    expect(rest.body).toMatchObject((res.body as GraphqlBody).data?.dashboard ?? {});
  });

  it("refuses judge URLs on the website blacklist, subdomains included, with BAD_USER_INPUT and saves nothing", async () => {
    // `token` is the admin (first user); the blacklist is global, so it is emptied again afterwards.
    await h.http.post("/api/saveSettings").set("Authorization", `Bearer ${token}`).send({ website_blacklist: ["blocked.example"] }).expect(200);
    try {
      const me = await h.register();
      const settings = async () => (await h.http.get("/api/user/settings").set("Authorization", `Bearer ${me.token}`)).body as Record<string, unknown>;
      const before = await settings();
      const mutation = "mutation Save($input: UserSettingsInput!) { updateUserSettings(input: $input) { timeout judges { url } } }";
      for (const blockedUrl of ["http://blocked.example/azenv", "https://judge.eu.blocked.example/"]) {
        const judges = [
          { url: "http://judge.good.example/", regex: "default" },
          { url: blockedUrl, regex: "default" },
          { url: "http://notblocked.example/", regex: "default" }, // a look-alike host, not a subdomain
        ];
        const res = await gql(mutation, { input: { timeout: 9000, judges } }, me.token);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({
          data: null,
          errors: [
            expect.objectContaining({
              message: expect.any(String),
              extensions: { code: "BAD_USER_INPUT", blocked_judges: [blockedUrl], website_blacklist: ["blocked.example"] },
            }),
          ],
        });
        expect([blockedUrl, await settings()]).toEqual([blockedUrl, before]);
      }
    } finally {
      await h.http.post("/api/saveSettings").set("Authorization", `Bearer ${token}`).send({ website_blacklist: [] }).expect(200);
    }
  });

  it("gives every judge_valid_proxies field, and the whole dashboard, as GET /api/getDashboardInfo does", async () => {
    // A fresh caller: other tests of this file add proxies to the shared user.
    const me = await h.register();
    const myId = (await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${me.token}`)).body.user_id as number;
    const other = await h.register();
    const otherId = (await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${other.token}`)).body.user_id as number;
    await h.db.pool.query(
      `INSERT INTO proxies (user_id, ip, port, country, reputation_label, reputation_score) VALUES ($1, '4.4.4.4', 8080, 'NL', 'good', 88.5)`,
      [myId],
    );
    await h.db.pool.query(`INSERT INTO user_daily_stats (user_id, day, checks, scraped) VALUES ($1, current_date, 40, 6)`, [myId]);
    const judgeDays: [number, number, string, number, number, number][] = [
      // user, days ago, judge, elite, anonymous, transparent
      [myId, 0, "http://judge-a.example/", 3_000_000_000, 2, 1], // past GraphQL's Int: a SafeInt
      [myId, 10, "http://judge-a.example/", 5, 0, 4],
      [myId, 0, "http://judge-c.example/", 0, 0, 8],
      [myId, 1, "http://judge-b.example/", 1, 7, 0],
      [otherId, 0, "http://judge-a.example/", 1000, 1000, 1000],
      [otherId, 0, "http://judge-other.example/", 1, 1, 1],
    ];
    for (const [user, daysAgo, url, elite, anonymous, transparent] of judgeDays) {
      await h.db.pool.query(
        `INSERT INTO judge_daily_stats (user_id, day, judge_url, elite, anonymous, transparent) VALUES ($1, current_date - $2::int, $3, $4, $5, $6)`,
        [user, daysAgo, url, elite, anonymous, transparent],
      );
    }
    const res = await gql(
      `{ dashboard {
        total_checks total_scraped total_checks_week total_scraped_week
        reputation_breakdown { good neutral poor unknown }
        country_breakdown { country count }
        judge_valid_proxies { judge_url elite_proxies anonymous_proxies transparent_proxies }
        top_reputation_proxy { proxy_id ip port score label }
      } }`,
      undefined,
      me.token,
    );
    expect(res.status).toBe(200);
    expect((res.body as GraphqlBody).errors).toBeUndefined();
    const dashboard = (res.body as GraphqlBody).data?.dashboard as Record<string, unknown>;
    // Summed over every day, the caller's only; most proxies first, ties by URL.
    expect(dashboard.judge_valid_proxies).toEqual([
      { judge_url: "http://judge-a.example/", elite_proxies: 3_000_000_005, anonymous_proxies: 2, transparent_proxies: 5 },
      { judge_url: "http://judge-b.example/", elite_proxies: 1, anonymous_proxies: 7, transparent_proxies: 0 },
      { judge_url: "http://judge-c.example/", elite_proxies: 0, anonymous_proxies: 0, transparent_proxies: 8 },
    ]);
    const rest = await h.http.get("/api/getDashboardInfo").set("Authorization", `Bearer ${me.token}`);
    expect(rest.status).toBe(200);
    expect(dashboard).toEqual(rest.body);
  });

  it("lists a filtered page of the caller's proxies with the REST rules", async () => {
    // A fresh caller: other tests of this file add proxies to the shared user.
    const me = await h.register();
    const myId = (await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${me.token}`)).body.user_id as number;
    const other = await h.register();
    const otherId = (await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${other.token}`)).body.user_id as number;
    await h.db.pool.query(
      `INSERT INTO proxies (user_id, ip, port, country, alive, alive_protocols, response_time, anonymity_level, reputation_label, reputation_score)
       SELECT $1, '7.7.' || (i / 256) || '.' || (i % 256), 8000 + i,
              CASE WHEN i % 3 = 0 THEN 'US' ELSE 'DE' END,
              i % 2 = 0, CASE WHEN i % 2 = 0 THEN 1 ELSE 0 END, CASE WHEN i % 2 = 0 THEN 100 + i ELSE 0 END,
              CASE WHEN i % 2 = 0 THEN 'elite' ELSE 'N/A' END,
              CASE WHEN i % 4 = 0 THEN 'good' ELSE 'unknown' END, CASE WHEN i % 4 = 0 THEN 80 ELSE 0 END
       FROM generate_series(1, 60) AS i`,
      [otherId],
    );
    const { rows } = await h.db.pool.query<{ id: number }>(
      `INSERT INTO proxies (user_id, ip, port, country, alive, alive_protocols, response_time, anonymity_level, reputation_label, reputation_score)
       SELECT $1, '8.8.' || (i / 256) || '.' || (i % 256), 9000 + i,
              CASE WHEN i % 3 = 0 THEN 'US' ELSE 'DE' END,
              i % 2 = 0, CASE WHEN i % 2 = 0 THEN 9 ELSE 0 END, CASE WHEN i % 2 = 0 THEN 100 + i ELSE 0 END,
              CASE WHEN i % 2 = 0 THEN 'elite' ELSE 'N/A' END,
              CASE WHEN i % 4 = 0 THEN 'good' ELSE 'unknown' END, CASE WHEN i % 4 = 0 THEN 80 ELSE 0 END
       FROM generate_series(1, 60) AS i RETURNING id`,
      [myId],
    );
    const mine = rows.map((r) => r.id).sort((a, b) => a - b);

    const count = await gql("{ proxyCount }", undefined, me.token);
    expect((count.body as GraphqlBody).data).toEqual({ proxyCount: 60 });

    const pageQuery = `query Page($page: Int!, $pageSize: Int, $filter: ProxyFilter) {
      proxies(page: $page, pageSize: $pageSize, filter: $filter) {
        total
        proxies { id ip port protocols country alive response_time anonymity_level latest_check reputation { overall { kind score label } } }
      }
    }`;
    const filter = { status: "alive", country: ["US"], reputation: ["good"] };
    const res = await gql(pageQuery, { page: 1, pageSize: 2, filter }, me.token);
    expect(res.status).toBe(200);
    const page = (res.body as GraphqlBody).data?.proxies as { total: number; proxies: Record<string, unknown>[] };
    // alive (even), US (multiple of 3), good (multiple of 4): multiples of 12 up to 60.
    expect(page.total).toBe(5);
    expect(page.proxies).toHaveLength(2);
    expect(page.proxies[0]).toEqual({
      id: mine[11],
      ip: "8.8.0.12",
      port: 9012,
      protocols: ["http", "socks5"],
      country: "US",
      alive: true,
      response_time: 112,
      anonymity_level: "elite",
      latest_check: null,
      reputation: { overall: { kind: "overall", score: 80, label: "good" } },
    });

    // The same page over REST.
    const rest = await h.http
      .get("/api/getProxyPage/1?pageSize=2&status=alive&country=US&reputation=good")
      .set("Authorization", `Bearer ${me.token}`);
    expect(rest.status).toBe(200);
    expect(rest.body).toMatchObject(page);

    const past = await gql(pageQuery, { page: 4, pageSize: 2, filter }, me.token);
    expect((past.body as GraphqlBody).data?.proxies).toEqual({ total: 5, proxies: [] });
    const clamped = await gql(pageQuery, { page: 1, pageSize: 1000 }, me.token);
    expect(((clamped.body as GraphqlBody).data?.proxies as { proxies: unknown[] }).proxies).toHaveLength(60);

    for (const [variables, message] of [
      [{ page: 0 }, "page must be a positive integer"],
      [{ page: 1, pageSize: 0 }, "pageSize must be a positive integer"],
      [{ page: 1, filter: { status: "zombie" } }, "status must be one of alive, dead"],
      [{ page: 1, filter: { maxTimeout: -5 } }, "maxTimeout must be a non-negative integer"],
    ] as const) {
      const bad = await gql(pageQuery, variables, me.token);
      expect(bad.status).toBe(200);
      expect((bad.body as GraphqlBody).errors).toEqual([
        expect.objectContaining({ message: expect.stringContaining(message), extensions: { code: "BAD_USER_INPUT" } }),
      ]);
    }
  });

  it("gives one proxy by id with statistics, and null for another user's id", async () => {
    const other = await h.register();
    const otherId = (await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${other.token}`)).body.user_id as number;
    const insert = async (owner: number, ip: string) =>
      (
        await h.db.pool.query<{ id: number }>(
          `INSERT INTO proxies (user_id, ip, port, username, password, alive, alive_protocols, response_time, anonymity_level,
                                reputation_label, reputation_score, latest_check)
           VALUES ($1, $2, 3128, 'u', 'p:w', true, 1, 240, 'anonymous', 'neutral', 50, now()) RETURNING id`,
          [owner, ip],
        )
      ).rows[0]!.id;
    const id = await insert(userId, "9.9.9.1");
    const foreign = await insert(otherId, "9.9.9.2");
    for (let i = 0; i < 3; i++) {
      await h.db.pool.query(
        `INSERT INTO proxy_statistics (proxy_id, user_id, protocol, alive, attempt, response_time, anonymity_level, judge_url, created_at)
         VALUES ($1, $2, 'http', $3, 0, $4, 'anonymous', 'http://judge.example/', now() - make_interval(mins => $5))`,
        [id, userId, i !== 1, 200 + i, 10 - i],
      );
    }
    await h.db.pool.query(
      `INSERT INTO proxy_statistics (proxy_id, user_id, protocol, alive, attempt, response_time, anonymity_level, judge_url)
       VALUES ($1, $2, 'http', true, 0, 1, 'elite', 'http://judge.example/')`,
      [foreign, otherId],
    );
    await h.db.pool.query(`INSERT INTO proxy_reputations (proxy_id, kind, score, label) VALUES ($1, 'http', 61.5, 'good')`, [id]);

    const query = `query One($id: Int!, $limit: Int) {
      proxy(id: $id) {
        id ip port username password has_auth alive response_time anonymity_level
        reputation { overall { kind score label } http { score label } socks5 { label } }
        latest_statistic { response_time }
        statistics(limit: $limit) { id alive response_time protocol judge created_at }
      }
    }`;
    const res = await gql(query, { id, limit: 2 });
    expect(res.status).toBe(200);
    const proxy = (res.body as GraphqlBody).data?.proxy as Record<string, unknown> & { statistics: { response_time: number; id: number }[] };
    expect(proxy).toMatchObject({
      id,
      ip: "9.9.9.1",
      port: 3128,
      username: "u",
      password: "p:w",
      has_auth: true,
      alive: true,
      response_time: 240,
      anonymity_level: "anonymous",
      reputation: { overall: { kind: "overall", score: 50, label: "neutral" }, http: { score: 61.5, label: "good" }, socks5: null },
      latest_statistic: { response_time: 202 },
    });
    expect(proxy.statistics.map((s) => s.response_time)).toEqual([202, 201]);
    expect(typeof proxy.statistics[0]?.id).toBe("number");
    const rest = await h.http.get(`/api/proxies/${id}/statistics?limit=2`).set("Authorization", `Bearer ${token}`);
    expect(rest.body).toEqual({ statistics: proxy.statistics.map((s) => expect.objectContaining(s)) });

    // Another tenant's proxy is indistinguishable from a missing one.
    for (const missing of [foreign, 2_000_000_000, -1]) {
      const none = await gql(query, { id: missing });
      expect(none.status).toBe(200);
      expect(none.body).toEqual({ data: { proxy: null } });
    }
    const badLimit = await gql(query, { id, limit: 0 });
    expect((badLimit.body as GraphqlBody).errors?.[0]).toMatchObject({
      message: "limit must be a positive integer",
      extensions: { code: "BAD_USER_INPUT" },
      path: ["proxy", "statistics"],
    });
  });

  it("answers a malformed body with 400 {error} and a body without a query with GraphQL errors", async () => {
    const malformed = await h.http
      .post("/api/graphql")
      .set("Authorization", `Bearer ${token}`)
      .set("Content-Type", "application/json")
      .send("{ not json");
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({ error: expect.any(String) });
    // JSON that is not one object: a batch (off), a bare value (which the JSON parser refuses first).
    for (const [body, message] of [
      ['[{"query":"{ proxyCount }"}]', "one GraphQL operation"],
      ["[]", "one GraphQL operation"],
      ['"{ proxyCount }"', "Malformed JSON"],
      ["42", "Malformed JSON"],
    ]) {
      const res = await h.http.post("/api/graphql").set("Authorization", `Bearer ${token}`).set("Content-Type", "application/json").send(body);
      expect([body, res.status, res.body]).toEqual([body, 400, { error: expect.stringContaining(message!) }]);
    }
    const noQuery = await h.http.post("/api/graphql").set("Authorization", `Bearer ${token}`).send({ variables: {} });
    expect(noQuery.status).toBe(400);
    expect((noQuery.body as GraphqlBody).errors?.[0]?.extensions?.code).toBe("BAD_REQUEST");
    const unparsable = await gql("{ proxyCount");
    expect(unparsable.status).toBe(400);
    expect((unparsable.body as GraphqlBody).errors?.[0]?.extensions?.code).toBe("GRAPHQL_PARSE_FAILED");
  });

  it("refuses a NUL in a string literal with a 400 validation error and runs nothing, as REST refuses one anywhere", async () => {
    // In a document a NUL is the escape \u0000 or \u{0}; JSON carries that as \\u0000, which the body's own NUL check lets through.
    for (const literal of ["\\u0000", "\\u{0}", "45.1\\u0000"]) {
      const res = await gql(`{ proxies(page: 1, filter: { search: "${literal}" }) { total } }`);
      expect([literal, res.status, (res.body as GraphqlBody).data]).toEqual([literal, 400, undefined]);
      expect((res.body as GraphqlBody).errors).toEqual([
        expect.objectContaining({ message: NUL_MESSAGE, extensions: expect.objectContaining({ code: "GRAPHQL_VALIDATION_FAILED" }) }),
      ]);
    }
    const before = (await h.http.get("/api/user/settings").set("Authorization", `Bearer ${token}`)).body as Record<string, unknown>;
    const save = await gql(`mutation { updateUserSettings(input: { timeout: 9000, judges: [{ url: "http://judge.example/\\u0000", regex: "default" }] }) { timeout } }`);
    expect(save.status).toBe(400);
    expect((save.body as GraphqlBody).errors?.[0]?.message).toBe(NUL_MESSAGE);
    const after = (await h.http.get("/api/user/settings").set("Authorization", `Bearer ${token}`)).body as Record<string, unknown>;
    expect(after).toEqual(before);
    // A NUL in a variable is a \u0000 escape in the JSON body itself: the body parser's 400 {error}.
    const variable = await gql("query P($f: ProxyFilter) { proxies(page: 1, filter: $f) { total } }", { f: { search: "45.1\u0000" } });
    expect([variable.status, variable.body]).toEqual([400, { error: NUL_MESSAGE }]);
  });

  it("refuses a document over MAX_QUERY_TOKENS with a parse error, before validation, however few bytes it has", async () => {
    // The audit's query: 16 KiB of one alias repeated, which graphql-js's overlapping-fields rule compared pair by pair for over a second.
    const repeated = `{ ${"a:proxies(page:1){total} ".repeat(655)}}`;
    expect(Buffer.byteLength(repeated)).toBeLessThanOrEqual(16 * 1024);
    const expectTooManyTokens = (res: { status: number; headers: Record<string, string>; body: unknown }) => {
      expect(res.status).toBe(400);
      expect(res.headers["content-type"]).toMatch(/^application\/json/);
      const body = res.body as GraphqlBody;
      expect(body.data).toBeUndefined();
      expect(body.errors).toEqual([
        expect.objectContaining({
          message: `Syntax Error: Document contains more that ${MAX_QUERY_TOKENS} tokens. Parsing aborted.`,
          extensions: { code: "GRAPHQL_PARSE_FAILED" },
        }),
      ]);
    };
    expectTooManyTokens(await gql(repeated));

    // Exactly n tokens in few fields, so the token limit is the one reached: 5 for `{ viewer { } }`, 3 per distinct alias, 1 per plain field.
    const ofTokens = (n: number) => {
      const plain = ["role", "user_id"].slice(0, (n - 5) % 3);
      const aliases = Array.from({ length: Math.floor((n - 5) / 3) }, (_, i) => `u${i}: user_id`);
      return `{ viewer { ${[...plain, ...aliases].join(" ")} } }`;
    };
    const atLimit = ofTokens(MAX_QUERY_TOKENS);
    expect([countTokens(atLimit), countTokens(ofTokens(MAX_QUERY_TOKENS + 1))]).toEqual([MAX_QUERY_TOKENS, MAX_QUERY_TOKENS + 1]);
    const ok = await gql(atLimit);
    expect([ok.status, (ok.body as GraphqlBody).errors, (ok.body as GraphqlBody).data?.viewer]).toEqual([
      200,
      undefined,
      expect.objectContaining({ u0: userId }),
    ]);
    expectTooManyTokens(await gql(ofTokens(MAX_QUERY_TOKENS + 1)));
  });

  it("refuses a document over MAX_QUERY_FIELDS before validation, with a GraphQL error naming the limit", async () => {
    // The same field repeated: each copy is compared with every other, so time grows with the square of the count.
    const repeated = (fields: number) => `{ viewer { ${"user_id ".repeat(fields - 1)}} }`;
    const ok = await gql(repeated(MAX_QUERY_FIELDS));
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ data: { viewer: { user_id: userId } } });
    const over = await gql(repeated(MAX_QUERY_FIELDS + 1));
    expect(over.status).toBe(400);
    expect(over.headers["content-type"]).toMatch(/^application\/json/);
    expect(over.body).toEqual({
      errors: [
        {
          message: `Document has ${MAX_QUERY_FIELDS + 1} fields; the limit is ${MAX_QUERY_FIELDS}`,
          extensions: { code: "GRAPHQL_VALIDATION_FAILED", limit: "fields", fields: MAX_QUERY_FIELDS + 1, maxFields: MAX_QUERY_FIELDS },
        },
      ],
    });
    // Fields of a fragment count where it is defined, once, however often it is spread.
    const spread = `{ viewer { ...V ...V } } fragment V on Viewer { ${"user_id ".repeat(MAX_QUERY_FIELDS - 1)}}`;
    expect((await gql(spread)).status).toBe(200);
  });

  it("answers the largest useful query, every field of a page, a proxy, the dashboard and the settings, well within both limits", async () => {
    const me = await h.register();
    const myId = (await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${me.token}`)).body.user_id as number;
    const { rows } = await h.db.pool.query<{ id: number }>(
      `INSERT INTO proxies (user_id, ip, port, alive, alive_protocols, response_time, anonymity_level) VALUES ($1, '3.3.3.3', 8080, true, 1, 90, 'elite') RETURNING id`,
      [myId],
    );
    const id = rows[0]!.id;
    await h.db.pool.query(
      `INSERT INTO proxy_statistics (proxy_id, user_id, protocol, alive, attempt, response_time, anonymity_level, judge_url)
       VALUES ($1, $2, 'http', true, 0, 90, 'elite', 'http://judge.example/')`,
      [id, myId],
    );
    const reputation = "kind score label";
    const statistic = "id alive attempt response_time protocol anonymity_level judge created_at";
    const proxyFields = "id ip port protocols estimated_type response_time country anonymity_level alive latest_check";
    const query = `query Everything($page: Int!, $pageSize: Int, $filter: ProxyFilter, $id: Int!, $limit: Int) {
      viewer {
        user_id role
        settings {
          http_protocol https_protocol socks4_protocol socks5_protocol timeout retries UseHttpsForSocks transport_protocol
          auto_remove_failing_proxies auto_remove_failure_threshold judges { url regex } scraping_sources
          proxy_list_columns scrape_source_proxy_columns scrape_source_list_columns
        }
      }
      dashboard {
        total_checks total_scraped total_checks_week total_scraped_week
        reputation_breakdown { good neutral poor unknown }
        country_breakdown { country count }
        judge_valid_proxies { judge_url elite_proxies anonymous_proxies transparent_proxies }
        top_reputation_proxy { proxy_id ip port score label }
      }
      proxyCount
      proxies(page: $page, pageSize: $pageSize, filter: $filter) {
        total
        proxies { ${proxyFields} reputation { overall { ${reputation} } } }
      }
      proxy(id: $id) {
        ${proxyFields}
        username password has_auth scheme_hint asn attempt consecutive_failures next_check_at created_at
        protocol_results { protocol alive attempt response_time anonymity_level judge checked_at check_count success_count uptime_percentage }
        latest_statistic { ${statistic} }
        reputation { overall { ${reputation} } http { ${reputation} } https { ${reputation} } socks4 { ${reputation} } socks5 { ${reputation} } }
        statistics(limit: $limit) { ${statistic} }
      }
    }`;
    // 231 tokens and 133 fields: the limits leave four times that room.
    expect(countTokens(query) * 4).toBeLessThan(MAX_QUERY_TOKENS);
    expect(countFields(parse(query)) * 3).toBeLessThan(MAX_QUERY_FIELDS);
    const res = await h.http
      .post("/api/graphql")
      .set("Content-Type", "application/json")
      .set("Authorization", `Bearer ${me.token}`)
      .send(JSON.stringify({ query, variables: { page: 1, pageSize: 100, filter: { status: "alive" }, id, limit: 500 } }));
    expect(res.status).toBe(200);
    const body = res.body as GraphqlBody;
    expect(body.errors).toBeUndefined();
    expect(body.data).toMatchObject({
      viewer: { user_id: myId },
      proxyCount: 1,
      proxies: { total: 1, proxies: [{ id, ip: "3.3.3.3", port: 8080 }] },
      proxy: { id, ip: "3.3.3.3", statistics: [{ protocol: "http", response_time: 90 }] },
    });
  });

  it("allows introspection outside production", async () => {
    const res = await gql("{ __schema { queryType { name } } }");
    expect(res.status).toBe(200);
    expect((res.body as GraphqlBody).data).toEqual({ __schema: { queryType: { name: "Query" } } });
  });
});

describe("POST /api/graphql limits", () => {
  let h: GatewayHarness;
  let token: string;
  let userId: number;

  const gql = (query: string, variables?: Record<string, unknown>) => postGraphql(h, query, variables, token);

  beforeAll(async () => {
    // Small limits so the real server's checks can be hit with this schema.
    h = await startGatewayHarness({ GRAPHQL_MAX_DEPTH: "3", GRAPHQL_MAX_COST: "2000", GRAPHQL_MAX_QUERY_BYTES: "1024", API_JSON_MAX_BODY_BYTES: "4096" });
    token = (await h.register()).token;
    const me = await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${token}`);
    userId = (me.body as { user_id: number }).user_id;
  });
  afterAll(async () => {
    await h.close();
  });

  it("answers 413 {error} for a query over GRAPHQL_MAX_QUERY_BYTES, and accepts one at the limit", async () => {
    const base = "{ viewer { user_id } }";
    const atLimit = base + " ".repeat(1024 - Buffer.byteLength(base));
    const ok = await gql(atLimit);
    expect(ok.status).toBe(200);
    expect((ok.body as GraphqlBody).data).toEqual({ viewer: { user_id: userId } });
    const over = await gql(`${atLimit} `);
    expect(over.status).toBe(413);
    expect(over.body).toEqual({ error: expect.stringContaining("1024") });
    // Multi-byte characters count as bytes, not characters.
    const wide = await gql(`# ${"é".repeat(520)}\n${base}`);
    expect(wide.status).toBe(413);
  });

  it("answers 413 {error} for a whole body over API_JSON_MAX_BODY_BYTES whose query is under GRAPHQL_MAX_QUERY_BYTES", async () => {
    const query = "{ viewer { user_id } }";
    // Variables the operation does not declare are ignored by GraphQL: here they only make the body big.
    const bodyWithPad = (padBytes: number) => JSON.stringify({ query, variables: { pad: "x".repeat(padBytes) } });
    const send = (body: string) =>
      h.http.post("/api/graphql").set("Content-Type", "application/json").set("Authorization", `Bearer ${token}`).send(body);
    const padAtLimit = 4096 - Buffer.byteLength(bodyWithPad(0));
    const atLimit = await send(bodyWithPad(padAtLimit));
    expect(atLimit.status).toBe(200);
    expect(atLimit.body).toEqual({ data: { viewer: { user_id: userId } } });
    const over = await send(bodyWithPad(padAtLimit + 1));
    expect(over.status).toBe(413);
    expect(over.headers["content-type"]).toMatch(/^application\/json/);
    expect(over.body).toEqual({ error: expect.any(String) });
  });

  it("refuses an operation deeper than GRAPHQL_MAX_DEPTH with a GraphQL validation error", async () => {
    const atLimit = await gql("{ viewer { settings { timeout } } }");
    expect(atLimit.status).toBe(200);
    expect((atLimit.body as GraphqlBody).errors).toBeUndefined();

    const expectTooDeep = (res: { status: number; body: unknown }) => {
      expect(res.status).toBe(400);
      const body = res.body as GraphqlBody;
      expect(body.data).toBeUndefined();
      expect(body.errors).toEqual([
        expect.objectContaining({
          message: expect.stringContaining("4 levels deep; the limit is 3"),
          extensions: { code: "GRAPHQL_VALIDATION_FAILED", limit: "depth", depth: 4, maxDepth: 3 },
        }),
      ]);
    };
    expectTooDeep(await gql("{ viewer { settings { judges { url } } } }"));
    // Depth is counted through fragments and inline fragments.
    expectTooDeep(
      await gql(`
        query ViaFragments { viewer { ...V } }
        fragment V on Viewer { settings { ... on UserSettings { judges { ...J } } } }
        fragment J on Judge { url }
      `),
    );
  });

  it("refuses an operation over GRAPHQL_MAX_COST", async () => {
    // One page of six fields costs 20 + 1 + 100 × 6 = 621; four exceed 2000, three do not.
    const aliases = (n: number) => Array.from({ length: n }, (_, i) => `p${i}: proxies(page: 1) { proxies { id ip port country alive estimated_type } }`).join(" ");
    const cheap = await gql(`query Cheap { ${aliases(3)} }`);
    expect(cheap.status).toBe(200);
    expect((cheap.body as GraphqlBody).data).toMatchObject({ p0: { proxies: [] } });
    const res = await gql(`query Costly { ${aliases(4)} }`);
    expect(res.status).toBe(400);
    const body = res.body as GraphqlBody;
    expect(body.data).toBeUndefined();
    expect(body.errors).toEqual([
      expect.objectContaining({
        message: 'Operation "Costly" costs 2484; the limit is 2000',
        extensions: { code: "GRAPHQL_VALIDATION_FAILED", limit: "cost", cost: 2484, maxCost: 2000 },
      }),
    ]);
  });

});

describe("POST /api/graphql in production", () => {
  let h: GatewayHarness;
  afterAll(async () => {
    await h.close();
  });

  it("turns introspection off", async () => {
    h = await startGatewayHarness({ NODE_ENV: "production", ENABLE_PUBLIC_FIRST_ADMIN_BOOTSTRAP: "true" });
    const { token } = await h.register();
    const res = await h.http
      .post("/api/graphql")
      .set("Authorization", `Bearer ${token}`)
      .send({ query: "{ __schema { queryType { name } } }" });
    expect(res.status).toBe(400);
    expect((res.body as { errors: { message: string }[] }).errors[0]?.message).toMatch(/introspection/i);
    const normal = await h.http.post("/api/graphql").set("Authorization", `Bearer ${token}`).send({ query: "{ viewer { role } }" });
    expect(normal.body).toEqual({ data: { viewer: { role: "admin" } } });
  });
});
