import { Redis } from "ioredis";
import { waitFor } from "@roost/testkit";
import type { Response, Test } from "supertest";
import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../test-support/gateway.harness.js";
import { startOwnedRedis, type OwnedRedis } from "../test-support/owned-redis.js";
import { HIGH_LIMIT } from "../test-support/rate-limit-checks.js";

/**
 * Seeded random requests to every route (a failure names its seed and the
 * request): odd JSON (wrong types, deep nesting, huge strings, NUL, lone
 * surrogates, bidi controls), odd multipart, odd query strings and path
 * segments, with no token, a bad one, a user's and the admin's. Every answer
 * is below 500, every 4xx is JSON `{error}` (GraphQL: `{errors}`), `/readyz`
 * stays ready, and Redis (this file's own server) grows by less than
 * REDIS_GROWTH_BOUND_BYTES over the whole run.
 */

const REQUESTS_PER_SEED = 700;
const SEEDS = [11, 12, 13];
/** What the run may add to Redis: rate-limit counters, revoked jtis, queue jobs; never a request's payload. */
const REDIS_GROWTH_BOUND_BYTES = 8 * 1024 * 1024;

/** xorshift32: small, seeded, the same requests every run. */
function randomness(seed: number) {
  let x = seed || 1;
  const next = (): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4_294_967_296;
  };
  const below = (n: number): number => Math.floor(next() * n);
  return { below, one: <T>(items: readonly T[]): T => items[below(items.length)] as T };
}
type Random = ReturnType<typeof randomness>;

const ODD_STRINGS = [
  "",
  " ",
  "0",
  "-1",
  "1e400",
  "99999999999999999999999",
  "true",
  "null",
  "NaN",
  "\u0000",
  "a\u0000b",
  "%00",
  "\ud800",
  "\udfff\ud800",
  "\u202Eevil",
  "\u200D",
  "\uFEFF",
  "💥🚀",
  "é\u0301",
  "x".repeat(5_000),
  "y".repeat(300_000),
  "__proto__",
  "constructor",
  "alice@example.com",
  "ALICE@EXAMPLE.COM ",
  `${"a".repeat(900)}@example.com`,
  "Correct-Horse-43",
  "http://127.0.0.1:1/",
  "1.2.3.4:8080",
  "<script>",
  "' OR 1=1 --",
  "\r\n\r\n",
];
const KEYS = [
  "email",
  "password",
  "oldPassword",
  "newPassword",
  "token",
  "retries",
  "timeout",
  "protocols",
  "judges",
  "UseHttpsForSocks",
  "transport_protocol",
  "proxies",
  "scope",
  "filter",
  "proxyStatus",
  "outputFormat",
  "reputationLabels",
  "proxyTextarea",
  "checker",
  "website_blacklist",
  "query",
  "variables",
  "scrapeSourceTextarea",
  "clipboardScrapeSources",
  "name",
  "instance_id",
  "protocol",
  "listen_protocol",
  "auth_required",
  "auth_username",
  "auth_password",
  "reputation_labels",
  "uptime_filter_type",
  "uptime_percentage",
  "__proto__",
];

function deepNesting(r: Random): string {
  const depth = r.one([100, 5_000, 100_000]);
  return r.below(2) === 0 ? `${"[".repeat(depth)}${"]".repeat(depth)}` : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

function jsonValue(r: Random, depth = 0): unknown {
  const kind = r.below(depth > 3 ? 2 : 4);
  if (kind === 0) return r.one(ODD_STRINGS);
  if (kind === 1) return r.one<unknown>([null, true, false, 0, -1, 1.5, 2 ** 53, 1e308, [], {}]);
  if (kind === 2) return Array.from({ length: r.below(4) }, () => jsonValue(r, depth + 1));
  const object: Record<string, unknown> = {};
  for (let n = r.below(5); n > 0; n--) object[r.one(KEYS)] = jsonValue(r, depth + 1);
  return object;
}

function jsonBody(r: Random): string {
  return r.one([
    () => JSON.stringify(jsonValue(r)),
    () => JSON.stringify(jsonValue(r)),
    () => deepNesting(r),
    () => r.one(["", "{", '{"a":', "[1,", "nul", '"x"', "1", "\u0000", '{"a":"\\u0000"}', '{"email":"\\ud800"}']),
    () => JSON.stringify({ pad: "z".repeat(r.one([10, 700_000, 2_000_000])) }),
  ])();
}

const BOUNDARY = "fuzz-boundary";
function multipartBody(r: Random): string {
  let text = "";
  for (let n = r.below(4); n > 0; n--) {
    const name = r.one(["file", "proxyTextarea", "scrapeSourceTextarea", "email", "", "x\u0000"]);
    const filename = r.below(2) === 0 ? '; filename="a.txt"' : "";
    text += `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"${filename}\r\n\r\n${r.one(ODD_STRINGS)}\r\n`;
  }
  return r.below(3) === 0 ? text : `${text}--${BOUNDARY}--\r\n`;
}

/** Every UTF-8 byte percent-encoded (encodeURIComponent throws on a lone surrogate). */
function percentEncoded(text: string): string {
  return [...Buffer.from(text, "utf8")].map((byte) => `%${byte.toString(16).padStart(2, "0")}`).join("");
}

function queryString(r: Random): string {
  const parts = Array.from({ length: r.below(4) }, () => `${r.one(["pageSize", "search", "status", "page", "limit", "url", "a", "__proto__", "a[b][c]"])}=${percentEncoded(r.one(ODD_STRINGS).slice(0, 2_000))}`);
  if (r.below(6) === 0) parts.push(r.one(["%", "%zz", "a=%E0%A4%A", "a=%ED%A0%80", "=", "&&", "a[]=1&a[]=2"]));
  return parts.length > 0 ? `?${parts.join("&")}` : "";
}

const SEGMENTS = ["1", "0", "-1", "abc", "1.5", "99999999999999999999", "%00", "%ff", "%F0%9F%92%A5", "1e3", "%2e%2e"];

type Method = "get" | "post" | "delete" | "put" | "patch";
interface Route {
  method: Method;
  path: (r: Random) => string;
  /** Whose token is sent most of the time. */
  as: "anyone" | "user" | "admin" | "fresh";
}

const ROUTES: Route[] = [
  { method: "post", path: () => "/api/register", as: "anyone" },
  { method: "post", path: () => "/api/login", as: "anyone" },
  { method: "post", path: () => "/api/forgotPassword", as: "anyone" },
  { method: "post", path: () => "/api/resetPassword", as: "anyone" },
  { method: "get", path: () => "/api/releases", as: "anyone" },
  { method: "post", path: () => "/api/refreshToken", as: "fresh" },
  { method: "post", path: () => "/api/logout", as: "fresh" },
  { method: "get", path: () => "/api/checkLogin", as: "user" },
  { method: "get", path: () => "/api/user/role", as: "user" },
  { method: "get", path: (r) => `/api/user/settings${queryString(r)}`, as: "user" },
  { method: "post", path: () => "/api/user/settings", as: "user" },
  { method: "post", path: () => "/api/changePassword", as: "user" },
  { method: "post", path: () => "/api/deleteAccount", as: "user" },
  { method: "get", path: (r) => `/api/getDashboardInfo${queryString(r)}`, as: "user" },
  { method: "get", path: (r) => `/api/getProxyCount${queryString(r)}`, as: "user" },
  { method: "get", path: (r) => `/api/getProxyPage/${r.one(SEGMENTS)}${queryString(r)}`, as: "user" },
  { method: "get", path: (r) => `/api/proxyFilters${queryString(r)}`, as: "user" },
  { method: "get", path: (r) => `/api/proxies/${r.one(SEGMENTS)}${r.one(["", "/statistics", `/statistics/${r.one(SEGMENTS)}`])}${queryString(r)}`, as: "user" },
  { method: "delete", path: () => "/api/proxies", as: "user" },
  { method: "post", path: () => "/api/user/export", as: "user" },
  { method: "post", path: () => "/api/addProxies", as: "user" },
  { method: "post", path: () => "/api/graphql", as: "user" },
  { method: "post", path: () => "/api/scrapingSources", as: "user" },
  { method: "delete", path: () => "/api/scrapingSources", as: "user" },
  { method: "get", path: (r) => `/api/getScrapingSourcesCount${queryString(r)}`, as: "user" },
  { method: "get", path: (r) => `/api/getScrapingSourcesPage/${r.one(SEGMENTS)}${queryString(r)}`, as: "user" },
  { method: "get", path: (r) => `/api/scrapingSources/check${queryString(r)}`, as: "user" },
  { method: "get", path: (r) => `/api/scrapingSources/respectRobots${queryString(r)}`, as: "user" },
  { method: "get", path: (r) => `/api/scrapingSources/${r.one(SEGMENTS)}${r.one(["", "/proxies"])}${queryString(r)}`, as: "user" },
  { method: "get", path: (r) => `/api/rotatingProxies${r.one(["", "/instances"])}${queryString(r)}`, as: "user" },
  { method: "post", path: () => "/api/rotatingProxies", as: "user" },
  { method: "delete", path: (r) => `/api/rotatingProxies/${r.one(SEGMENTS)}`, as: "user" },
  { method: "post", path: (r) => `/api/rotatingProxies/${r.one(SEGMENTS)}/next`, as: "user" },
  { method: "get", path: () => "/api/global/settings", as: "admin" },
  { method: "post", path: () => "/api/saveSettings", as: "admin" },
  { method: "get", path: (r) => r.one(["/healthz", "/readyz", "/metrics"]), as: "anyone" },
  { method: "get", path: (r) => `/api/${r.one(SEGMENTS)}/${r.one(SEGMENTS)}`, as: "user" },
  { method: "put", path: () => "/api/user/settings", as: "user" },
  { method: "patch", path: () => "/api/login", as: "anyone" },
];

const GRAPHQL_QUERIES = [
  "{ viewer { user_id role } }",
  "{ dashboard { total_checks } proxyCount }",
  "{ proxies(page: 1) { total proxies { id ip } } }",
  "{ proxy(id: 1) { id statistics(limit: 5) { id } } }",
  "mutation { updateUserSettings(input: { retries: 3 }) { retries } }",
  "{ a: dashboard { total_checks } b: dashboard { total_checks } }",
  `{ ${"viewer { user_id } ".repeat(300)} }`,
  "{",
  "query Q($p: Int!) { proxies(page: $p) { total } }",
];

/** Every route the Express app registers, as "METHOD /path" with its parameters (mount paths left out, as Express keeps them). */
function registeredRoutes(stack: readonly unknown[], found: string[] = []): string[] {
  for (const layer of stack as { route?: { path: string; methods: Record<string, boolean> }; handle?: { stack?: unknown[] } }[]) {
    if (layer.route) for (const method of Object.keys(layer.route.methods)) found.push(`${method.toUpperCase()} ${layer.route.path}`);
    else if (layer.handle?.stack) registeredRoutes(layer.handle.stack, found);
  }
  return found;
}

async function usedMemory(probe: Redis): Promise<number> {
  return Number(/^used_memory:(\d+)/m.exec(await probe.info("memory"))?.[1]);
}

describe("every route under random input", () => {
  let redis: OwnedRedis;
  let probe: Redis;
  let h: GatewayHarness;
  let admin: string;
  let user: string;
  let userEmail: string;

  beforeAll(async () => {
    redis = await startOwnedRedis();
    probe = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    probe.on("error", () => undefined);
    h = await startGatewayHarness({
      REDIS_URL: redis.url,
      RATE_LIMIT_LOGIN_PER_MINUTE: HIGH_LIMIT,
      RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL: HIGH_LIMIT,
      RATE_LIMIT_LOGIN_FAILURES_PER_IP: HIGH_LIMIT,
      RATE_LIMIT_REGISTER_PER_MINUTE: HIGH_LIMIT,
      RATE_LIMIT_REFRESH_TOKEN_PER_ACCOUNT_PER_MINUTE: HIGH_LIMIT,
      RATE_LIMIT_PASSWORD_CHECKS_PER_ACCOUNT_PER_MINUTE: HIGH_LIMIT,
      RATE_LIMIT_PASSWORD_CHECK_FAILURES_PER_ACCOUNT: HIGH_LIMIT,
    });
    await h.service.start();
    // Set-up only: on a loaded machine the database may answer 503 for a moment; a client retries.
    const register = async (email: string): Promise<string> => {
      let token = "";
      await waitFor(
        async () => {
          const res = await h.http.post("/api/register").send({ email, password: STRONG_PASSWORD });
          token = (res.body as { token?: string }).token ?? "";
          if (res.status !== 201 && res.status !== 503) throw new Error(`register ${email}: ${res.status} ${res.text}`);
          return res.status === 201;
        },
        { timeoutMs: 30_000, intervalMs: 500, what: `registering ${email}` },
      );
      return token;
    };
    admin = await register("admin@example.com");
    userEmail = "user@example.com";
    user = await register(userEmail);
    await h.http.post("/api/addProxies").set("Authorization", `Bearer ${user}`).send({ proxyTextarea: "8.8.8.8:80\n9.9.9.9:3128:u:p" });
  }, 60_000);
  afterAll(async () => {
    await h.close();
    probe.disconnect();
    await redis.close();
  });

  async function freshToken(): Promise<string> {
    const res = await h.http.post("/api/login").send({ email: userEmail, password: STRONG_PASSWORD });
    return (res.body as { token: string }).token;
  }

  it("covers every route the gateway registers", () => {
    const r = randomness(1);
    const generated = new Set<string>();
    for (const route of ROUTES) {
      for (let n = 0; n < 200; n++) generated.add(`${route.method.toUpperCase()} ${route.path(r).split("?")[0]?.replace(/^\/api(?=\/)/, "")}`);
    }
    const registered = registeredRoutes((h.service.app as unknown as { router: { stack: unknown[] } }).router.stack);
    expect(registered.length).toBeGreaterThan(30);
    const unfuzzed = registered.filter((route) => {
      const pattern = new RegExp(`^${route.replace(/:[^/]+/g, "[^/]+")}$`);
      return ![...generated].some((path) => pattern.test(path));
    });
    expect(unfuzzed).toEqual([]);
  });

  it.each(SEEDS)(
    "no 5xx, every 4xx is JSON {error}, /readyz stays ready, Redis stays bounded (seed %i)",
    async (seed) => {
      const r = randomness(seed);
      const memoryBefore = await usedMemory(probe);
      const wrong: string[] = [];
      const statuses = new Map<number, number>();
      for (let n = 0; n < REQUESTS_PER_SEED; n++) {
        const route = r.one(ROUTES);
        const path = route.path(r);
        const own = route.as === "admin" ? admin : route.as === "fresh" ? await freshToken() : user;
        const token = r.one([own, own, own, "", "not-a-token", `${own}x`]);
        let req: Test = h.http[route.method](path);
        if (token !== "") req = req.set("Authorization", `Bearer ${token}`);
        let sent = "";
        let described = `${route.method.toUpperCase()} ${path.slice(0, 120)}`;
        if (route.method !== "get") {
          const multipart = r.below(5) === 0;
          sent = multipart
            ? multipartBody(r)
            : path === "/api/graphql" && r.below(2) === 0
              ? JSON.stringify({ query: r.one(GRAPHQL_QUERIES), variables: r.below(2) === 0 ? jsonValue(r) : { p: r.one<unknown>([1, "1", null, 2 ** 60]) } })
              : jsonBody(r);
          const contentType = multipart
            ? r.one([`multipart/form-data; boundary=${BOUNDARY}`, "multipart/form-data", `multipart/form-data; boundary=${BOUNDARY}-other`])
            : r.one(["application/json", "application/json", "application/json; charset=utf-8", "application/json; charset=latin1", "text/plain", "application/x-www-form-urlencoded"]);
          req = req.set("Content-Type", contentType);
          described += ` (${contentType}) ${JSON.stringify(sent.slice(0, 120))}`;
        }
        let res: Response;
        try {
          res = await (sent === "" ? req : req.send(sent));
        } catch (error) {
          wrong.push(`${described} -> no answer: ${String(error)}`);
          continue;
        }
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const body = res.body as { error?: unknown; errors?: unknown };
        const graphqlErrors = path === "/api/graphql" && Array.isArray(body.errors);
        if (res.status >= 500) wrong.push(`${described} -> ${res.status} ${res.text.slice(0, 200)}`);
        else if (res.status >= 400 && !graphqlErrors) {
          if (!/^application\/json/.test(String(res.headers["content-type"])) || typeof body.error !== "string") {
            wrong.push(`${described} -> ${res.status} not JSON {error}: ${res.text.slice(0, 200)}`);
          }
        }
      }
      // Enough of the run reaches the handlers, not only the parsers and guards.
      expect((statuses.get(200) ?? 0) + (statuses.get(204) ?? 0)).toBeGreaterThan(REQUESTS_PER_SEED / 10);
      const ready = await h.http.get("/readyz");
      const memoryGrowth = (await usedMemory(probe)) - memoryBefore;
      expect({ seed, wrong: wrong.slice(0, 8), wrongCount: wrong.length }).toEqual({ seed, wrong: [], wrongCount: 0 });
      expect([ready.status, (ready.body as { status: string }).status]).toEqual([200, "ready"]);
      expect(memoryGrowth).toBeLessThan(REDIS_GROWTH_BOUND_BYTES);
      // The accounts the run relies on are intact.
      expect((await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${admin}`)).status).toBe(200);
    },
    180_000,
  );
});
