import { createHmac, generateKeyPairSync, sign as rsaSign } from "node:crypto";
import express from "express";
import request, { type Response } from "supertest";
import { v7 as uuidv7 } from "uuid";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../test-support/gateway.harness.js";
import { bearer, claimsOf } from "../test-support/token-claims.js";
import { requireAdmin, requireAuth } from "./auth.middleware.js";
import { errorHandler } from "./error-handler.js";

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** A JWT built by hand, so every part (header, claims, signature) can be wrong on purpose. */
function forge(header: Record<string, unknown>, claims: Record<string, unknown>, signer: (input: string) => string): string {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${signer(input)}`;
}
const hmac = (algorithm: "sha256" | "sha512", key: string | Buffer) => (input: string) =>
  createHmac(algorithm, key).update(input).digest("base64url");

function expect401(res: Response, error?: string): void {
  expect(res.status).toBe(401);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  expect(res.body).toEqual({ error: error ?? expect.any(String) });
}

describe("requireAuth against tampered tokens", () => {
  let h: GatewayHarness;
  let secret: string;
  let claims: Record<string, unknown>;
  beforeAll(async () => {
    h = await startGatewayHarness();
    secret = h.deps.config.JWT_SECRET ?? "";
    expect(Buffer.byteLength(secret)).toBeGreaterThanOrEqual(32);
    const { token } = await h.register("admin@example.com");
    const now = Math.floor(Date.now() / 1000);
    claims = { user_id: claimsOf(token).user_id, role: "admin", iat: now, exp: now + 600, jti: uuidv7() };
  });
  afterAll(async () => {
    await h.close();
  });

  const checkLogin = (token: string) => h.http.get("/api/checkLogin").set(bearer(token));

  it("accepts a hand-built HS256 token with the right secret (positive control for the cases below)", async () => {
    const res = await checkLogin(forge({ alg: "HS256", typ: "JWT" }, claims, hmac("sha256", secret)));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ user_id: claims.user_id, role: "admin" });
  });

  it("refuses a token signed with another secret", async () => {
    expect401(await checkLogin(forge({ alg: "HS256", typ: "JWT" }, claims, hmac("sha256", "x".repeat(48)))), "Invalid token");
  });

  it("refuses a real token whose claims were edited after signing", async () => {
    const { token } = await h.register();
    const [header, , signature] = token.split(".");
    const edited = `${header}.${b64({ ...claimsOf(token), role: "admin" })}.${signature}`;
    expect401(await checkLogin(edited), "Invalid token");
    expect((await checkLogin(token)).status).toBe(200);
  });

  it("refuses alg none, with and without a signature", async () => {
    expect401(await checkLogin(forge({ alg: "none", typ: "JWT" }, claims, () => "")));
    expect401(await checkLogin(forge({ alg: "none", typ: "JWT" }, claims, hmac("sha256", secret))));
    expect401(await checkLogin(forge({ alg: "NONE" }, claims, () => "")));
  });

  it("refuses HS512 even with the right secret", async () => {
    expect401(await checkLogin(forge({ alg: "HS512", typ: "JWT" }, claims, hmac("sha512", secret))));
  });

  it("refuses RS256 tokens, and an HS256 signature behind an RS256 header (algorithm confusion)", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const rs256 = forge({ alg: "RS256", typ: "JWT" }, claims, (input) => rsaSign("sha256", Buffer.from(input), privateKey).toString("base64url"));
    expect401(await checkLogin(rs256));
    expect401(await checkLogin(forge({ alg: "RS256", typ: "JWT" }, claims, hmac("sha256", secret))));
    // The classic confusion: an HMAC keyed with the public key's PEM.
    const pem = publicKey.export({ type: "spki", format: "pem" });
    expect401(await checkLogin(forge({ alg: "HS256", typ: "JWT" }, claims, hmac("sha256", pem))));
  });

  it("refuses an expired token with the right signature", async () => {
    const past = Math.floor(Date.now() / 1000) - 3600;
    const expired = forge({ alg: "HS256", typ: "JWT" }, { ...claims, iat: past - 600, exp: past, jti: uuidv7({ msecs: (past - 600) * 1000 }) }, hmac("sha256", secret));
    expect401(await checkLogin(expired), "Token expired");
  });

  it("refuses well-signed tokens whose claims are not the contract's", async () => {
    const sign = (c: Record<string, unknown>) => forge({ alg: "HS256", typ: "JWT" }, c, hmac("sha256", secret));
    expect401(await checkLogin(sign({ ...claims, user_id: String(claims.user_id) })));
    expect401(await checkLogin(sign({ ...claims, role: "root" })));
    expect401(await checkLogin(sign({ ...claims, jti: "not-a-uuid" })));
    expect401(await checkLogin(sign({ ...claims, jti: "0f0e3d6a-1c9b-4d1e-8a3b-2f4c5d6e7f80" }))); // a v4 uuid carries no issue time
    const { jti: _omitted, ...withoutJti } = claims;
    expect401(await checkLogin(sign(withoutJti)));
  });

  it("refuses missing and malformed Authorization headers", async () => {
    const { token } = await h.register();
    expect401(await h.http.get("/api/checkLogin"), "Missing bearer token");
    for (const header of ["", "Bearer", "Bearer ", `Basic ${token}`, `Token ${token}`, `Bearer ${token} extra`, "Bearer a.b", "Bearer not-a-jwt", `Bearer ${token}.x`]) {
      expect401(await h.http.get("/api/checkLogin").set("Authorization", header));
    }
    expect((await h.http.get("/api/checkLogin").set("Authorization", `bearer ${token}`)).status).toBe(200);
  });

  it("counts refusals in svc_auth_failures_total", async () => {
    const metric = await h.deps.metrics.registry.getSingleMetric("svc_auth_failures_total")?.get();
    const reasons = new Map(metric?.values.map((v) => [String(v.labels.reason), v.value]));
    expect(reasons.get("missing_token")).toBeGreaterThan(0);
    expect(reasons.get("token_expired")).toBeGreaterThan(0);
    expect(reasons.get("token_signature")).toBeGreaterThan(0);
  });
});

describe("requireAdmin", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it("lets an admin through, answers 403 {error} to a user and 401 without a token", async () => {
    // The real middleware on a tiny app: no admin route is mounted by this area of the gateway.
    const app = express();
    app.get("/admin-only", requireAuth(h.deps), requireAdmin, (_req, res) => {
      res.json({ ok: true });
    });
    app.use(errorHandler(h.deps.logger));
    const admin = await h.register();
    const user = await h.register();
    expect((await request(app).get("/admin-only").set(bearer(admin.token))).body).toEqual({ ok: true });
    const forbidden = await request(app).get("/admin-only").set(bearer(user.token));
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers["content-type"]).toMatch(/^application\/json/);
    expect(forbidden.body).toEqual({ error: expect.any(String) });
    expect401(await request(app).get("/admin-only"));
  });

  it("guards the gateway's admin routes: GET /api/global/settings and POST /api/saveSettings", async () => {
    const admin = (await h.http.post("/api/login").send({ email: (await h.db.prisma.user.findFirstOrThrow({ where: { role: "admin" } })).email, password: STRONG_PASSWORD })).body.token as string;
    const user = await h.register();
    expect((await h.http.get("/api/global/settings").set(bearer(admin))).status).toBe(200);
    for (const res of [await h.http.get("/api/global/settings").set(bearer(user.token)), await h.http.post("/api/saveSettings").set(bearer(user.token)).send({})]) {
      expect(res.status).toBe(403);
      expect(res.headers["content-type"]).toMatch(/^application\/json/);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    expect401(await h.http.get("/api/global/settings"));
    expect401(await h.http.post("/api/saveSettings").send({}));
  });
});

describe("revocation cutoff within one second", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it("revokes a token issued earlier in the same second as a password change, keeps one issued right after", async () => {
    const { email } = await h.register();
    const passwords = [STRONG_PASSWORD, "Battery-Staple-77"];
    let current = 0;
    const login = async (password: string) => {
      const res = await h.http.post("/api/login").send({ email, password });
      expect(res.status).toBe(200);
      return res.body.token as string;
    };
    for (let attempt = 1; ; attempt++) {
      // Start near the beginning of a wall-clock second so the three requests fit in it.
      await waitFor(() => Date.now() % 1000 < 150, { intervalMs: 5, what: "the start of a second" });
      const before = await login(passwords[current]!);
      const next = 1 - current;
      const changed = await h.http.post("/api/changePassword").set(bearer(before)).send({ oldPassword: passwords[current], newPassword: passwords[next] });
      expect(changed.status).toBe(200);
      current = next;
      const after = await login(passwords[current]!);
      if (claimsOf(before).iat !== claimsOf(after).iat) {
        if (attempt >= 20) throw new Error("could not fit a login, a password change and a login in one second in 20 attempts");
        continue;
      }
      expect(claimsOf(before).iat).toBe(claimsOf(after).iat);
      expect401(await h.http.get("/api/checkLogin").set(bearer(before)), "Token revoked");
      expect((await h.http.get("/api/checkLogin").set(bearer(after))).status).toBe(200);
      break;
    }
  });
});
