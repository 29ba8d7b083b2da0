import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../test-support/gateway.harness.js";
import { bearer } from "../test-support/token-claims.js";

/**
 * The JSON body of an authenticated route is read only once the token checks
 * out: without one, a malformed, NUL-holding or oversized body is a 401, not
 * the parser's 400 or 413 (it was never parsed). Anonymous routes parse as before.
 */
describe("authenticate before parsing the body", () => {
  let h: GatewayHarness;
  let token: string;
  beforeAll(async () => {
    h = await startGatewayHarness({ API_JSON_MAX_BODY_BYTES: "1024" });
    ({ token } = await h.register());
  });
  afterAll(async () => {
    await h.close();
  });

  const bodies = {
    malformed: '{"retries": ',
    nul: '{"retries": "\\u0000"}',
    oversized: JSON.stringify({ pad: "x".repeat(4096) }),
  };
  const routes = [
    ["post", "/api/user/settings"],
    ["post", "/api/changePassword"],
    ["post", "/api/user/export"],
    ["delete", "/api/proxies"],
    ["post", "/api/saveSettings"],
    ["post", "/api/User/Settings/"],
  ] as const;

  it("without a token (or with a bad one) the body is not parsed: 401 {error}", async () => {
    for (const [method, path] of routes) {
      for (const [kind, body] of Object.entries(bodies)) {
        for (const authorization of [undefined, "Bearer not-a-token"]) {
          let req = h.http[method](path).set("Content-Type", "application/json");
          if (authorization) req = req.set("Authorization", authorization);
          const res = await req.send(body);
          expect([method, path, kind, authorization, res.status, res.body]).toEqual([method, path, kind, authorization, 401, { error: expect.any(String) }]);
        }
      }
    }
  });

  it("with a valid token the parser answers as before; anonymous routes parse without one", async () => {
    const malformed = await h.http.post("/api/user/settings").set(bearer(token)).set("Content-Type", "application/json").send(bodies.malformed);
    expect([malformed.status, malformed.body]).toEqual([400, { error: "Malformed JSON body" }]);
    const oversized = await h.http.post("/api/user/settings").set(bearer(token)).set("Content-Type", "application/json").send(bodies.oversized);
    expect(oversized.status).toBe(413);
    const login = await h.http.post("/api/login").set("Content-Type", "application/json").send(bodies.malformed);
    expect([login.status, login.body]).toEqual([400, { error: "Malformed JSON body" }]);
    const forgot = await h.http.post("/api/forgotPassword").set("Content-Type", "application/json").send(bodies.nul);
    expect(forgot.status).toBe(400);
    expect((await h.http.post("/api/login").send({ email: "nobody@example.com", password: STRONG_PASSWORD })).status).toBe(401);
  });

  it("an unknown route stays a 404 for everyone", async () => {
    const res = await h.http.post("/api/no-such-route").set("Content-Type", "application/json").send(bodies.malformed);
    expect([res.status, res.body]).toEqual([404, { error: expect.any(String) }]);
  });
});
