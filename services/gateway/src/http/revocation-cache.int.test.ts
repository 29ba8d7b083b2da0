import { waitFor } from "@roost/testkit";
import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../test-support/gateway.harness.js";
import { startGatewayPeer, type GatewayPeer } from "../test-support/gateway-peer.js";
import { bearer, claimsOf } from "../test-support/token-claims.js";

/**
 * The in-process revocation answer cache (fail-open mode): repeat checks do
 * not ask Redis, a revocation made on any instance is applied everywhere
 * through the broadcast (long before the TTL), one never broadcast is seen
 * once the TTL ends, and strict mode never caches.
 */

/** Counts the revocation lookups an instance sends to Redis (the MGET of isRevoked). */
function countLookups(redis: { mget: (...args: never[]) => unknown }): { readonly count: number } {
  const counter = { count: 0 };
  const original = redis.mget.bind(redis) as (...args: never[]) => unknown;
  redis.mget = (...args: never[]) => {
    counter.count++;
    return original(...args);
  };
  return counter;
}

const LONG_TTL = { AUTH_REVOCATION_CACHE_TTL_MS: "60000" };

describe("revocation cache across two gateway instances", () => {
  let a: GatewayHarness;
  let b: GatewayPeer;
  beforeAll(async () => {
    a = await startGatewayHarness(LONG_TTL);
    b = await startGatewayPeer(a, { env: LONG_TTL });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  it("answers repeat checks from memory and applies a logout made on the other instance at once", async () => {
    const { token } = await a.register();
    const lookups = countLookups(b.deps.redis);
    expect((await b.http.get("/api/checkLogin").set(bearer(token))).status).toBe(200);
    const afterFirst = lookups.count;
    expect(afterFirst).toBe(1);
    for (let i = 0; i < 10; i++) expect((await b.http.get("/api/checkLogin").set(bearer(token))).status).toBe(200);
    expect(lookups.count).toBe(afterFirst);

    expect((await a.http.post("/api/logout").set(bearer(token))).status).toBe(204);
    // The TTL is a minute: only the broadcast can make this happen within the deadline.
    await waitFor(async () => (await b.http.get("/api/checkLogin").set(bearer(token))).status === 401, {
      what: "the peer to refuse the logged-out token",
      timeoutMs: 3000,
    });
    // The instance that revoked it refuses it at once.
    expect((await a.http.get("/api/checkLogin").set(bearer(token))).status).toBe(401);
  });

  it("applies a password change made on the other instance to every cached token of the user", async () => {
    const { token, email } = await a.register();
    const second = (await b.http.post("/api/login").send({ email, password: STRONG_PASSWORD })).body.token as string;
    for (const t of [token, second]) expect((await b.http.get("/api/checkLogin").set(bearer(t))).status).toBe(200);

    const changed = await a.http.post("/api/changePassword").set(bearer(token)).send({ oldPassword: STRONG_PASSWORD, newPassword: "Another-Horse-43" });
    expect(changed.status).toBe(200);
    for (const t of [token, second]) {
      await waitFor(async () => (await b.http.get("/api/checkLogin").set(bearer(t))).status === 401, {
        what: "the peer to refuse a token issued before the password change",
        timeoutMs: 3000,
      });
    }
    const fresh = (await b.http.post("/api/login").send({ email, password: "Another-Horse-43" })).body.token as string;
    expect((await b.http.get("/api/checkLogin").set(bearer(fresh))).status).toBe(200);
  });
});

describe("revocation cache TTL", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness({ AUTH_REVOCATION_CACHE_TTL_MS: "300" });
  });
  afterAll(async () => {
    await h.close();
  });

  it("notices a revocation that was never broadcast once the TTL has passed", async () => {
    const { token } = await h.register();
    expect((await h.http.get("/api/checkLogin").set(bearer(token))).status).toBe(200);
    // A writer that bypasses the store (no broadcast): straight into PostgreSQL and Redis.
    const { jti, user_id: userId, exp } = claimsOf(token);
    await h.db.prisma.revokedToken.create({ data: { jti, userId, expiresAt: new Date(exp * 1000) } });
    await h.deps.redis.set(`${h.deps.config.QUEUE_PREFIX}:auth:revoked-jti:${jti}`, "1", "PXAT", exp * 1000);
    await waitFor(async () => (await h.http.get("/api/checkLogin").set(bearer(token))).status === 401, {
      what: "the revocation to be seen after the TTL",
      timeoutMs: 3000,
    });
  });
});

describe("AUTH_REVOCATION_FAIL_OPEN=false", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness({ AUTH_REVOCATION_FAIL_OPEN: "false", ...LONG_TTL });
  });
  afterAll(async () => {
    await h.close();
  });

  it("asks Redis on every request (strict mode never answers from memory)", async () => {
    const { token } = await h.register();
    const lookups = countLookups(h.deps.redis);
    for (let i = 0; i < 5; i++) expect((await h.http.get("/api/checkLogin").set(bearer(token))).status).toBe(200);
    expect(lookups.count).toBe(5);
  });
});
