import { brotliCompressSync, gzipSync } from "node:zlib";
import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../test-support/gateway.harness.js";

const COMPRESSED_REFUSAL = { error: "Compressed request bodies are not accepted: send the body without Content-Encoding" };

/**
 * Compressed JSON bodies are refused unread, on anonymous and authenticated
 * routes alike: the parser runs before any route's auth guard, and inflating
 * let a few bytes from anyone cost as much as a 1 MiB body.
 */
describe("Compressed request bodies", () => {
  let h: GatewayHarness;
  let token: string;
  let email: string;
  beforeAll(async () => {
    h = await startGatewayHarness();
    ({ token, email } = await h.register());
  });
  afterAll(async () => {
    await h.close();
  });

  const postEncoded = (path: string, encoding: string, body: Buffer, headers: Record<string, string> = {}) =>
    h.http
      .post(path)
      .set({ "Content-Type": "application/json", "Content-Encoding": encoding, ...headers })
      // Bytes as given: superagent would send a Buffer typed as JSON through JSON.stringify.
      .serialize((bytes: Buffer) => bytes as unknown as string)
      .send(body);

  it("answers 415 {error} to a gzip or brotli body on an anonymous and an authenticated route, without parsing it", async () => {
    const login = JSON.stringify({ email, password: STRONG_PASSWORD });
    const exportFilters = JSON.stringify({ proxyStatus: "alive", outputFormat: "json" });
    // The audit's body: a few bytes of brotli that inflate to 1 MiB of nested arrays.
    const nestedArrays = Buffer.from(`[${Array<string>(26_000).fill("[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]").join(",")}]`);
    const auth = { Authorization: `Bearer ${token}` };
    const cases: [string, string, Buffer, Record<string, string>][] = [
      ["/api/login", "gzip", gzipSync(login), {}],
      ["/api/login", "br", brotliCompressSync(login), {}],
      ["/api/login", "br", brotliCompressSync(nestedArrays), {}],
      ["/api/user/export", "gzip", gzipSync(exportFilters), auth],
      ["/api/user/export", "br", brotliCompressSync(nestedArrays), auth],
      // GraphQL parses its own body (after its auth guard), with the same parser.
      ["/api/graphql", "gzip", gzipSync(JSON.stringify({ query: "{ proxyCount }" })), auth],
    ];
    for (const [path, encoding, body, headers] of cases) {
      const res = await postEncoded(path, encoding, body, headers);
      expect({ path, encoding, bytes: body.length, status: res.status, body: res.body }).toEqual({
        path,
        encoding,
        bytes: body.length,
        status: 415,
        body: COMPRESSED_REFUSAL,
      });
      expect(res.headers["content-type"]).toMatch(/application\/json/);
    }

    // No token on an authenticated route: the guard answers first, the body is never read.
    const anonymous = await postEncoded("/api/user/export", "gzip", gzipSync(nestedArrays), {});
    expect([anonymous.status, anonymous.body]).toEqual([401, { error: "Missing bearer token" }]);

    // The same requests uncompressed work, on the same connections' server.
    const loggedIn = await h.http.post("/api/login").set("Content-Type", "application/json").send(login);
    expect(loggedIn.status).toBe(200);
    const exported = await h.http.post("/api/user/export").set(auth).set("Content-Type", "application/json").send(exportFilters);
    expect(exported.status).toBe(200);
    const counted = await h.http.post("/api/graphql").set(auth).set("Content-Type", "application/json").send({ query: "{ proxyCount }" });
    expect([counted.status, counted.body]).toEqual([200, { data: { proxyCount: 0 } }]);
    // And finds U+0000 in its raw text too.
    const nul = await h.http.post("/api/graphql").set(auth).set("Content-Type", "application/json").send(String.raw`{"query":"{ proxyCount }","operationName":"a\u0000"}`);
    expect([nul.status, nul.body]).toEqual([400, { error: "Request contains a NUL character (U+0000)" }]);
  });
});
