import net from "node:net";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../test-support/gateway.harness.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ALLOWED_ORIGIN = "https://app.example.com";

/** Cross-cutting behaviour every route shares: request ids, security headers, CORS, body limits, 404s, shutdown. */
describe("HTTP pipeline", () => {
  let h: GatewayHarness;
  beforeEach(async () => {
    h = await startGatewayHarness({ CORS_ALLOWED_ORIGINS: `${ALLOWED_ORIGIN}, https://admin.example.com`, API_JSON_MAX_BODY_BYTES: "2048" });
  });
  afterEach(async () => {
    await h?.close();
  });

  it("echoes a sane X-Request-ID and replaces anything else with a fresh one", async () => {
    const kept = await h.http.get("/api/releases").set("X-Request-ID", "abc-123_DEF.456:7");
    expect(kept.headers["x-request-id"]).toBe("abc-123_DEF.456:7");

    const generated = await h.http.get("/api/releases");
    expect(generated.headers["x-request-id"]).toMatch(UUID);
    const another = await h.http.get("/api/releases");
    expect(another.headers["x-request-id"]).toMatch(UUID);
    expect(another.headers["x-request-id"]).not.toBe(generated.headers["x-request-id"]);

    for (const insane of ["has spaces in it", "x".repeat(129), "semi;colon", "quote\"d", "<script>"]) {
      const res = await h.http.get("/api/releases").set("X-Request-ID", insane);
      expect({ insane, id: res.headers["x-request-id"] }).toEqual({ insane, id: expect.stringMatching(UUID) });
    }
    // Errors carry it too.
    const notFound = await h.http.get("/api/nowhere").set("X-Request-ID", "trace-404");
    expect([notFound.status, notFound.headers["x-request-id"]]).toEqual([404, "trace-404"]);
    const unauthorized = await h.http.get("/api/checkLogin").set("X-Request-ID", "trace-401");
    expect([unauthorized.status, unauthorized.headers["x-request-id"]]).toEqual([401, "trace-401"]);
  });

  it("sets the security headers on API, observability and error responses", async () => {
    for (const path of ["/api/releases", "/healthz", "/api/nowhere"]) {
      const res = await h.http.get(path);
      expect({
        path,
        nosniff: res.headers["x-content-type-options"],
        frame: res.headers["x-frame-options"],
        csp: res.headers["content-security-policy"],
        hsts: res.headers["strict-transport-security"],
        referrer: res.headers["referrer-policy"],
        poweredBy: res.headers["x-powered-by"],
      }).toEqual({
        path,
        nosniff: "nosniff",
        frame: "SAMEORIGIN",
        csp: expect.stringContaining("default-src 'self'"),
        hsts: expect.stringMatching(/^max-age=\d+/),
        referrer: "no-referrer",
        poweredBy: undefined,
      });
    }
  });

  it("allows only the configured CORS origins", async () => {
    const allowed = await h.http.get("/api/releases").set("Origin", ALLOWED_ORIGIN);
    expect(allowed.headers["access-control-allow-origin"]).toBe(ALLOWED_ORIGIN);
    expect(allowed.headers["access-control-expose-headers"]).toMatch(/X-Request-ID/);
    expect(allowed.headers.vary).toMatch(/Origin/);
    const second = await h.http.get("/api/releases").set("Origin", "https://admin.example.com");
    expect(second.headers["access-control-allow-origin"]).toBe("https://admin.example.com");

    for (const origin of ["https://evil.example.com", "https://app.example.com.evil.net", "http://app.example.com", "null"]) {
      const refused = await h.http.get("/api/releases").set("Origin", origin);
      expect({ origin, acao: refused.headers["access-control-allow-origin"] }).toEqual({ origin, acao: undefined });
    }

    const preflight = await h.http
      .options("/api/login")
      .set("Origin", ALLOWED_ORIGIN)
      .set("Access-Control-Request-Method", "POST")
      .set("Access-Control-Request-Headers", "Content-Type, Authorization");
    expect(preflight.status).toBe(204);
    expect(preflight.headers["access-control-allow-origin"]).toBe(ALLOWED_ORIGIN);
    expect(preflight.headers["access-control-allow-methods"]).toMatch(/POST/);
    const refusedPreflight = await h.http
      .options("/api/login")
      .set("Origin", "https://evil.example.com")
      .set("Access-Control-Request-Method", "POST");
    expect(refusedPreflight.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("answers 413 {error} to a JSON body over API_JSON_MAX_BODY_BYTES and 400 {error} to malformed JSON", async () => {
    const payload = (size: number) => JSON.stringify({ email: "someone@example.com", password: "x".repeat(size) });
    const tooLarge = await h.http.post("/api/login").set("Content-Type", "application/json").send(payload(4096));
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers["content-type"]).toMatch(/application\/json/);
    expect(tooLarge.body).toEqual({ error: expect.any(String) });

    const justUnder = await h.http.post("/api/login").set("Content-Type", "application/json").send(payload(1900));
    expect(justUnder.status).not.toBe(413);

    for (const raw of ['{"email": ', "{'single': 'quotes'}", "not json at all", '{"a":1}}']) {
      const malformed = await h.http.post("/api/login").set("Content-Type", "application/json").send(raw);
      expect({ raw, status: malformed.status, body: malformed.body }).toEqual({ raw, status: 400, body: { error: expect.any(String) } });
      expect(malformed.headers["content-type"]).toMatch(/application\/json/);
    }
  });

  it("answers unknown routes with a JSON 404, with or without a token", async () => {
    const { token } = await h.register();
    const cases: ["get" | "post" | "delete", string][] = [
      ["get", "/api/no-such-route"],
      ["post", "/api/no-such-route"],
      ["get", "/api/user/settings/extra"],
      ["delete", "/api/checkLogin"],
      ["get", "/no-such-root-path"],
    ];
    for (const [method, path] of cases) {
      for (const auth of [undefined, `Bearer ${token}`, "Bearer garbage"]) {
        const req = h.http[method](path);
        if (auth) req.set("Authorization", auth);
        const res = await req;
        expect({ method, path, auth, status: res.status, body: res.body }).toEqual({
          method,
          path,
          auth,
          status: 404,
          body: { error: expect.any(String) },
        });
        expect(res.headers["content-type"]).toMatch(/application\/json/);
      }
    }
  });

  it("answers a body that is neither JSON nor multipart with a 400 that says what to send", async () => {
    for (const [type, body] of [
      ["application/x-www-form-urlencoded", "email=a@example.com&password=x"],
      ["text/plain", '{"email":"a@example.com","password":"Correct-Horse-42"}'],
    ] as const) {
      const res = await h.http.post("/api/login").set("Content-Type", type).send(body);
      expect([type, res.status, res.body]).toEqual([type, 400, { error: expect.stringMatching(/Content-Type: application\/json/) }]);
    }
    // Bodiless requests and JSON pass as before.
    expect((await h.http.post("/api/login").send({ email: "a@example.com", password: "Wrong-Password-1" })).status).toBe(401);
  });

  it("takes multipart on the upload routes only: a multipart export or delete is a 400, not a request without filters", async () => {
    const { token } = await h.register();
    const auth = `Bearer ${token}`;
    const upload = await h.http.post("/API/addProxies/").set("Authorization", auth).field("proxyTextarea", "8.8.8.8:80\n8.8.4.4:80");
    expect(upload.status).toBe(200);
    const exported = await h.http.post("/api/user/export").set("Authorization", auth).field("proxyStatus", "alive").field("outputFormat", "json");
    expect([exported.status, exported.body]).toEqual([400, { error: expect.stringMatching(/Content-Type: application\/json/) }]);
    const deleted = await h.http.delete("/api/proxies").set("Authorization", auth).field("scope", "all");
    expect([deleted.status, deleted.body]).toEqual([400, { error: expect.stringMatching(/Content-Type: application\/json/) }]);
    const settings = await h.http.post("/api/user/settings").set("Authorization", auth).field("timeout", "5000");
    expect(settings.status).toBe(400);
    // GraphQL reads its own body (before this check) and refuses anything but JSON too.
    const graphql = await h.http.post("/api/graphql").set("Authorization", auth).field("query", "{ proxyCount }");
    expect([graphql.status, graphql.body]).toEqual([400, { error: expect.any(String) }]);
    expect((await h.http.get("/api/getProxyCount").set("Authorization", auth)).body).toBe(2);
  });

  it("stop() lets an in-flight request finish while refusing new connections", async () => {
    const { port } = await h.service.start();
    const body = JSON.stringify({ email: "nobody@example.com", password: "Wrong-Password-1" });

    // Headers first, with Expect: 100-continue: the interim 100 proves the
    // server has dispatched the request to the app before stop() is called.
    const socket = net.connect({ port, host: "127.0.0.1" });
    let received = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      received += chunk;
    });
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.write(
      [
        "POST /api/login HTTP/1.1",
        `Host: 127.0.0.1:${port}`,
        "Content-Type: application/json",
        `Content-Length: ${Buffer.byteLength(body)}`,
        "Expect: 100-continue",
        "",
        "",
      ].join("\r\n"),
    );
    await waitFor(() => received.startsWith("HTTP/1.1 100 Continue"), { timeoutMs: 5000, what: "100 Continue" });

    let stopped = false;
    const stopping = h.service.stop(10_000).then(() => {
      stopped = true;
    });

    // No new connections once stop() began.
    const refused = await new Promise<string>((resolve) => {
      const probe = net.connect({ port, host: "127.0.0.1" });
      probe.once("connect", () => {
        probe.destroy();
        resolve("connected");
      });
      probe.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"));
    });
    expect(refused).toBe("ECONNREFUSED");
    expect(stopped).toBe(false);

    // The in-flight request completes normally.
    socket.write(body);
    await waitFor(() => /\r\n\r\n\{.*\}$/s.test(received), { timeoutMs: 5000, what: "the response" });
    const finalResponse = received.slice(received.indexOf("HTTP/1.1", 5));
    expect(finalResponse).toMatch(/^HTTP\/1\.1 401 /);
    expect(finalResponse).toContain('{"error":"Invalid email or password"}');

    // The kept-alive socket closes once its response is done, well before
    // keepAliveTimeout (5 s): stopping does not wait out idle connections.
    await waitFor(() => stopped, { timeoutMs: 2000, what: "stop() to finish after the last response" });
    await stopping;
    await closed;
  });
});
