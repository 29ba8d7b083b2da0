import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";

/**
 * Random requests to the inventory endpoints (seeded: a failure names its
 * seed and request): whatever arrives, the answer is a 2xx, or a 4xx with a
 * JSON `{error}` string (GraphQL: its own shape), never a 5xx, another
 * user's proxy is never answered, and nothing throws where nobody listens (jest
 * fails the test on such an error). A
 * scratch version of this found the upload's unhandled multipart error.
 */

/** A small seeded generator (an LCG): every run sends the same requests. */
function generator(seed: number): { int(n: number): number; pick<T>(items: readonly T[]): T } {
  let state = seed >>> 0;
  const int = (n: number): number => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return (state >>> 8) % n;
  };
  return { int, pick: <T>(items: readonly T[]): T => items[int(items.length)] as T };
}

const STRINGS = [
  "", " ", "0", "1", "-1", "1.5", "1e3", "1e309", "99999999999999999999", "NaN", "alive", "dead", "all", "selected", "http", "socks5", "US", "good", "unknown",
  "\u0000", "%00", "%ff", "%", "é", "💥", "x".repeat(3000), "[]", "{}", "null", "ip:port", "protocol://username:password@ip:port", "json", "csv", "__proto__",
  "constructor", ",", "'", '"', "\\", "\n", "\r\n", "8.8.8.8:80", "a:b@5.5.5.5:55", "http://1.2.3.4:8080:a:b",
];
const KEYS = ["proxies", "filter", "scope", "proxyStatus", "reputationLabels", "outputFormat", "http", "https", "socks4", "socks5", "maxRetries", "maxTimeout", "__proto__", "constructor", "proxyTextarea", "clipboardProxies", "file", "query", "variables"];
const QUERY_KEYS = ["pageSize", "search", "status", "protocol", "country", "type", "anonymity", "reputation", "maxTimeout", "maxRetries", "limit", "__proto__"];
const SEGMENTS = ["1", "0", "-1", "abc", "1.5", "99999999999999999999", "%00", "%ff", "1e3", "%201", "0x10", "💥"];
const BOUNDARY = "----roost-fuzz";

type Random = ReturnType<typeof generator>;

function jsonValue(r: Random, ids: number[], depth = 0): unknown {
  const kind = r.int(depth > 2 ? 3 : 6);
  if (kind < 3) return r.pick<unknown>([null, true, false, 0, 1, -1, 2 ** 31, 2 ** 53, 1.5, 1e308, r.pick(STRINGS), r.pick(STRINGS), ids[0] ?? 1, String(ids[0] ?? 1)]);
  if (kind === 3) return Array.from({ length: r.int(4) }, () => jsonValue(r, ids, depth + 1));
  if (kind === 4) return r.pick<unknown>([ids, [...ids, 2 ** 40], ids.map(String), [1.5], [-1], Array.from({ length: 3000 }, (_, i) => i)]);
  const object: Record<string, unknown> = {};
  for (let k = r.int(5); k > 0; k--) object[r.pick(KEYS)] = jsonValue(r, ids, depth + 1);
  return object;
}

function body(r: Random, ids: number[]): string {
  return r.pick([
    () => JSON.stringify(jsonValue(r, ids)),
    () => JSON.stringify({ proxies: ids, scope: r.pick(STRINGS), filter: r.pick([true, false, "true"]) }),
    () => JSON.stringify({ outputFormat: r.pick(STRINGS), proxyStatus: r.pick(STRINGS), reputationLabels: [r.pick(STRINGS)] }),
    () => r.pick(["", "{", "[1,2", "null", '"text"', "1", "\u0000"]),
  ])();
}

function query(r: Random): string {
  const parts = Array.from({ length: r.int(5) }, () => `${r.pick(QUERY_KEYS)}=${encodeURIComponent(r.pick(STRINGS)).slice(0, 300)}`);
  if (r.int(8) === 0) parts.push(r.pick(["%", "a=%zz", "pageSize", "=1", "search=%00"]));
  return parts.length > 0 ? `?${parts.join("&")}` : "";
}

/** Parts under any name, files or fields, sometimes without the closing boundary. */
function multipart(r: Random): string {
  let text = "";
  for (let k = r.int(4); k > 0; k--) {
    const name = r.pick(["file", "proxyTextarea", "clipboardProxies", "other", ""]);
    const filename = r.int(2) === 0 ? '; filename="p.txt"' : "";
    text += `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"${filename}\r\n\r\n${r.pick(STRINGS)}\n${r.pick(STRINGS)}\r\n`;
  }
  return r.int(3) === 0 ? text : `${text}--${BOUNDARY}--\r\n`;
}

describe("inventory endpoints under random input", () => {
  let h: GatewayHarness;
  let owner: string;
  let other: string;
  let ids: number[];
  beforeAll(async () => {
    h = await startGatewayHarness();
    ({ token: owner } = await h.register());
    ({ token: other } = await h.register());
    await h.http.post("/api/addProxies").set("Authorization", `Bearer ${owner}`).send({ proxyTextarea: "8.8.8.8:80\n9.9.9.9:3128:u:p\n1.1.1.1:1080" });
    const page = await h.http.get("/api/getProxyPage/1").set("Authorization", `Bearer ${owner}`);
    ids = (page.body as { proxies: { id: number }[] }).proxies.map((p) => p.id);
  });
  afterAll(async () => {
    await h.close();
  });

  it.each([1, 2])("answers 2xx or 4xx {error}, seed %i", async (seed) => {
    const r = generator(seed);
    const wrong: string[] = [];
    for (let n = 0; n < 400; n++) {
      const token = r.pick([owner, owner, other, "not-a-token", ""]);
      const authorized = (test: ReturnType<GatewayHarness["http"]["get"]>) => (token === "" ? test : test.set("Authorization", `Bearer ${token}`));
      const contentType = (json: string) => r.pick([json, json, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]);
      let what: string;
      let res: Awaited<ReturnType<GatewayHarness["http"]["get"]>>;
      switch (r.int(9)) {
        case 0:
          what = `GET /api/getProxyPage/${r.pick(SEGMENTS)}${query(r)}`;
          res = await authorized(h.http.get(what.slice(4)));
          break;
        case 1:
          what = `GET ${r.pick(["/api/getProxyCount", "/api/proxyFilters", "/api/getDashboardInfo"])}${query(r)}`;
          res = await authorized(h.http.get(what.slice(4)));
          break;
        case 2:
          what = `GET /api/proxies/${r.pick([...SEGMENTS, String(ids[0])])}${r.pick(["", "/statistics", `/statistics${query(r)}`, `/statistics/${r.pick(SEGMENTS)}`])}`;
          res = await authorized(h.http.get(what.slice(4)));
          break;
        case 3: {
          const sent = body(r, ids);
          what = `DELETE /api/proxies ${sent.slice(0, 200)}`;
          res = await authorized(h.http.delete("/api/proxies")).set("Content-Type", contentType("application/json")).send(sent);
          break;
        }
        case 4: {
          const sent = body(r, ids);
          what = `POST /api/user/export ${sent.slice(0, 200)}`;
          res = await authorized(h.http.post("/api/user/export")).set("Content-Type", contentType("application/json")).send(sent);
          break;
        }
        case 5:
        case 6: {
          const sent = r.int(2) === 0 ? multipart(r) : body(r, ids);
          const type = sent.startsWith("--") ? r.pick([`multipart/form-data; boundary=${BOUNDARY}`, `multipart/form-data; boundary=${BOUNDARY}`, "multipart/form-data", `multipart/form-data; boundary=${BOUNDARY}x`]) : contentType("application/json");
          what = `POST /api/addProxies (${type}) ${JSON.stringify(sent.slice(0, 200))}`;
          res = await authorized(h.http.post("/api/addProxies")).set("Content-Type", type).send(sent);
          break;
        }
        default: {
          const sent = r.pick([
            () => body(r, ids),
            () =>
              JSON.stringify({
                query: r.pick(["{ proxyCount }", "{ proxies(page: 1) { total } }", `{ proxy(id: ${r.pick(["1", "-1", "99999999999", '"x"'])}) { id statistics(limit: ${r.pick(["0", "-5", "100000"])}) { id } } }`, "{", r.pick(STRINGS)]),
                variables: jsonValue(r, ids),
              }),
          ])();
          what = `POST /api/graphql ${sent.slice(0, 200)}`;
          res = await authorized(h.http.post("/api/graphql")).set("Content-Type", "application/json").send(sent);
        }
      }
      const graphqlAnswer = what.startsWith("POST /api/graphql") && res.status < 500 && Array.isArray((res.body as { errors?: unknown }).errors);
      const errorBody = res.status >= 400 && res.status < 500 && typeof (res.body as { error?: unknown }).error === "string";
      if (!(res.status < 400 || errorBody || graphqlAnswer)) wrong.push(`${what} -> ${res.status} ${res.text.slice(0, 200)}`);
      // The owner's proxy is never another user's to read.
      if (token === other && new RegExp(`^GET /api/proxies/${ids[0]}(?:[/?]|$)`).test(what) && res.status < 300) wrong.push(`${what} as the other user -> ${res.status}`);
    }
    expect({ seed, wrong: wrong.slice(0, 5) }).toEqual({ seed, wrong: [] });
  });
});
