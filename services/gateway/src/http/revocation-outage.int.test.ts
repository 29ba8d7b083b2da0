import { Redis } from "ioredis";
import type { Response } from "supertest";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../test-support/gateway.harness.js";
import { startOwnedRedis, type OwnedRedis } from "../test-support/owned-redis.js";
import { bearer, claimsOf } from "../test-support/token-claims.js";

/**
 * Revocation when Redis goes away, for real: each test drives a redis-server
 * of its own (started, stopped, restarted empty, flushed), never the shared one.
 */

const NEW_PASSWORD = "Battery-Staple-77";
const REVOCATION_TIMEOUT_MS = 300;

function expectError(res: Response, status: number): void {
  expect(res.status).toBe(status);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  expect(res.body).toEqual({ error: expect.any(String) });
}

let owned: OwnedRedis;
let probe: Redis;
beforeAll(async () => {
  owned = await startOwnedRedis();
  probe = new Redis(owned.url, { maxRetriesPerRequest: 1 });
  probe.on("error", () => undefined);
});
afterAll(async () => {
  probe.disconnect();
  await owned.close();
});

async function restartEmpty(): Promise<void> {
  await owned.stop();
  await owned.start();
}

describe("revoked tokens stay revoked when Redis restarts empty or is flushed", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness({ REDIS_URL: owned.url, AUTH_REVOCATION_FAIL_OPEN: "false", AUTH_REVOCATION_TIMEOUT_MS: String(REVOCATION_TIMEOUT_MS) });
  });
  afterAll(async () => {
    await h.close();
  });

  it("re-seeds Redis from PostgreSQL: logout, refresh, password change and deletion all survive", async () => {
    const status = async (token: string) => (await h.http.get("/api/checkLogin").set(bearer(token))).status;
    const login = async (email: string, password: string) => (await h.http.post("/api/login").send({ email, password })).body.token as string;

    const alice = await h.register("alice@example.com");
    const aliceLoggedOut = alice.token;
    const aliceValid = await login(alice.email, STRONG_PASSWORD);
    expect((await h.http.post("/api/logout").set(bearer(aliceLoggedOut))).status).toBe(204);

    const refreshedAway = await login(alice.email, STRONG_PASSWORD);
    const refreshed = (await h.http.post("/api/refreshToken").set(bearer(refreshedAway))).body.token as string;

    const bob = await h.register("bob@example.com");
    const bobOld = await login(bob.email, STRONG_PASSWORD);
    expect((await h.http.post("/api/changePassword").set(bearer(bobOld)).send({ oldPassword: STRONG_PASSWORD, newPassword: NEW_PASSWORD })).status).toBe(200);
    const bobValid = await login(bob.email, NEW_PASSWORD);

    const carol = await h.register("carol@example.com");
    const carolOther = await login(carol.email, STRONG_PASSWORD);
    expect((await h.http.post("/api/deleteAccount").set(bearer(carol.token)).send({ password: STRONG_PASSWORD })).status).toBe(200);

    const revoked = { aliceLoggedOut, refreshedAway, bobFirst: bob.token, bobOld, carol: carol.token, carolOther };
    const valid = { aliceValid, refreshed, bobValid };
    const expectStates = async (when: string) => {
      for (const [name, token] of Object.entries(revoked)) expect([when, name, await status(token)]).toEqual([when, name, 401]);
      for (const [name, token] of Object.entries(valid)) expect([when, name, await status(token)]).toEqual([when, name, 200]);
    };
    await expectStates("before");

    const prefix = `${h.deps.config.QUEUE_PREFIX}:`;
    const seededKey = `${prefix}auth:revocation-seeded`;
    for (const disaster of ["restart", "flush"] as const) {
      if (disaster === "restart") await restartEmpty();
      else await probe.flushall();
      await waitFor(async () => (await probe.dbsize()) === 0 || (await probe.exists(seededKey)) === 0, { what: "an empty Redis" });
      // Fail-closed: 503 until the gateway has reconnected, then PostgreSQL answers while Redis is re-seeded.
      await waitFor(async () => (await status(aliceValid)) === 200, { what: `the gateway to use Redis again after the ${disaster}` });
      await expectStates(`after ${disaster}`);
      await waitFor(async () => (await probe.exists(seededKey)) === 1, { what: "the re-seed" });
      // Redis alone answers now, from the re-seeded keys.
      expect(await probe.exists(`${prefix}auth:revoked-jti:${claimsOf(aliceLoggedOut).jti}`)).toBe(1);
      expect(await probe.exists(`${prefix}auth:revoked-jti:${claimsOf(refreshedAway).jti}`)).toBe(1);
      expect(Number(await probe.get(`${prefix}auth:cutoff:${claimsOf(bobOld).user_id}`))).toBeGreaterThanOrEqual(claimsOf(bobOld).iat * 1000);
      expect(Number(await probe.get(`${prefix}auth:cutoff:${claimsOf(carolOther).user_id}`))).toBeGreaterThanOrEqual(claimsOf(carolOther).iat * 1000);
      await expectStates(`after ${disaster}, re-seeded`);
    }
  });
});

describe("partial Redis loss: the seeded marker is bound to the server and to this process's connection", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    // No answer cache: every check asks Redis, which is what is under test.
    h = await startGatewayHarness({
      REDIS_URL: owned.url,
      AUTH_REVOCATION_FAIL_OPEN: "true",
      AUTH_REVOCATION_TIMEOUT_MS: String(REVOCATION_TIMEOUT_MS),
      AUTH_REVOCATION_CACHE_TTL_MS: "0",
    });
  });
  afterAll(async () => {
    await h.close();
  });

  const status = async (token: string) => (await h.http.get("/api/checkLogin").set(bearer(token))).status;
  const seededKey = () => `${h.deps.config.QUEUE_PREFIX}:auth:revocation-seeded`;
  const jtiKey = (token: string) => `${h.deps.config.QUEUE_PREFIX}:auth:revoked-jti:${claimsOf(token).jti}`;

  async function loggedOutToken(): Promise<{ loggedOut: string; valid: string }> {
    const { token, email } = await h.register();
    const valid = (await h.http.post("/api/login").send({ email, password: STRONG_PASSWORD })).body.token as string;
    expect((await h.http.post("/api/logout").set(bearer(token))).status).toBe(204);
    expect(await status(token)).toBe(401);
    await waitFor(async () => (await probe.exists(seededKey())) === 1 && (await status(valid)) === 200, { what: "a seeded Redis" });
    return { loggedOut: token, valid };
  }

  it("a revoked jti lost from Redis while every connection dropped is refused again (re-seed on reconnect)", async () => {
    const { loggedOut, valid } = await loggedOutToken();
    await probe.del(jtiKey(loggedOut));
    // Every client connection but the probe's is dropped; the gateway reconnects by itself.
    const probeId = await probe.client("ID");
    await probe.client("KILL", "TYPE", "normal", "SKIPME", "yes");
    await probe.client("KILL", "TYPE", "pubsub");
    await waitFor(async () => String(await probe.call("CLIENT", "LIST", "TYPE", "normal")).split("\n").filter(Boolean).length > 1, { what: "the gateway to reconnect" });
    expect(await probe.client("ID")).toBe(probeId);
    expect(await status(loggedOut)).toBe(401);
    expect(await status(valid)).toBe(200);
    await waitFor(async () => (await probe.exists(jtiKey(loggedOut))) === 1, { what: "the re-seed to restore the key" });
    expect(await status(loggedOut)).toBe(401);
  });

  it("a revoked jti lost while only the pub/sub connections dropped is refused again (re-seed on the subscriber's reconnect too)", async () => {
    const { loggedOut, valid } = await loggedOutToken();
    await probe.del(jtiKey(loggedOut));
    const commandClients = String(await probe.call("CLIENT", "LIST", "TYPE", "normal"));
    await probe.client("KILL", "TYPE", "pubsub");
    // The subscriber is back once it has subscribed again (its 'ready' comes first).
    await waitFor(async () => String(await probe.call("CLIENT", "LIST", "TYPE", "pubsub")).split("\n").filter(Boolean).length > 0, { what: "the subscriber to reconnect" });
    // The command connection was left alone.
    expect(String(await probe.call("CLIENT", "LIST", "TYPE", "normal")).split("\n").filter(Boolean).length).toBe(commandClients.split("\n").filter(Boolean).length);
    expect(await status(loggedOut)).toBe(401);
    expect(await status(valid)).toBe(200);
    await waitFor(async () => (await probe.exists(jtiKey(loggedOut))) === 1, { what: "the re-seed to restore the key" });
  });

  it("a marker that names another Redis server (restored snapshot, promoted replica) is not trusted", async () => {
    const { loggedOut, valid } = await loggedOutToken();
    await probe.del(jtiKey(loggedOut));
    // What a restored snapshot holds: the marker survived, the key did not. No connection dropped.
    await probe.set(seededKey(), "0000000000000000000000000000000000000000");
    expect(await status(loggedOut)).toBe(401);
    expect(await status(valid)).toBe(200);
    await waitFor(async () => (await probe.exists(jtiKey(loggedOut))) === 1, { what: "the re-seed to restore the key" });
    const runId = /^run_id:(\w+)/m.exec(await probe.info("server"))?.[1];
    expect(await probe.get(seededKey())).toBe(runId);
  });
});

describe("AUTH_REVOCATION_FAIL_OPEN=true with Redis stopped", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness({ REDIS_URL: owned.url, AUTH_REVOCATION_FAIL_OPEN: "true", AUTH_REVOCATION_TIMEOUT_MS: String(REVOCATION_TIMEOUT_MS) });
  });
  afterAll(async () => {
    if (!(await probe.ping().catch(() => null))) await owned.start();
    await h.close();
  });

  it("keeps serving valid tokens quickly, still refuses revoked ones, and refuses revocation writes with 503", async () => {
    const { token, email } = await h.register();
    const loggedOut = (await h.http.post("/api/login").send({ email, password: STRONG_PASSWORD })).body.token as string;
    expect((await h.http.post("/api/logout").set(bearer(loggedOut))).status).toBe(204);

    await owned.stop();

    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      const res = await h.http.get("/api/checkLogin").set(bearer(token));
      const elapsedMs = Date.now() - started;
      expect(res.status).toBe(200);
      // Bounded by the revocation timeout (plus the PostgreSQL fallback), not by Redis reconnects.
      expect(elapsedMs).toBeLessThan(REVOCATION_TIMEOUT_MS + 1500);
    }
    // PostgreSQL still knows the logout.
    expectError(await h.http.get("/api/checkLogin").set(bearer(loggedOut)), 401);

    // Revocation writes cannot land in Redis: 503 and nothing changes.
    expectError(await h.http.post("/api/logout").set(bearer(token)), 503);
    expectError(await h.http.post("/api/refreshToken").set(bearer(token)), 503);
    expectError(await h.http.post("/api/changePassword").set(bearer(token)).send({ oldPassword: STRONG_PASSWORD, newPassword: NEW_PASSWORD }), 503);
    expect(await h.db.prisma.revokedToken.count({ where: { jti: claimsOf(token).jti } })).toBe(0);
    expect(await h.db.prisma.tokenCutoff.count()).toBe(0);

    await owned.start();
    await waitFor(async () => (await h.deps.redis.ping().catch(() => null)) === "PONG", { what: "the gateway's Redis connection" });
    expect((await h.http.get("/api/checkLogin").set(bearer(token))).status).toBe(200);
    expectError(await h.http.get("/api/checkLogin").set(bearer(loggedOut)), 401);
    expect((await h.http.post("/api/login").send({ email, password: NEW_PASSWORD })).status).toBe(401);
    expect((await h.http.post("/api/login").send({ email, password: STRONG_PASSWORD })).status).toBe(200);
  });
});

describe("a hung Redis (SIGSTOP): requests are bounded by AUTH_REVOCATION_TIMEOUT_MS", () => {
  for (const failOpen of [true, false]) {
    it(`AUTH_REVOCATION_FAIL_OPEN=${failOpen}: ${failOpen ? "200" : "503"} within the timeout, not a hang`, async () => {
      const h = await startGatewayHarness({
        REDIS_URL: owned.url,
        AUTH_REVOCATION_FAIL_OPEN: String(failOpen),
        AUTH_REVOCATION_TIMEOUT_MS: String(REVOCATION_TIMEOUT_MS),
      });
      try {
        const { token, email } = await h.register();
        expect((await h.http.get("/api/checkLogin").set(bearer(token))).status).toBe(200);
        // Fail-open: the token just checked is answered from the in-process cache while Redis hangs;
        // tokens never checked before (issued now) have to ask Redis and show the bounded wait.
        const probeTokens: string[] = [];
        for (let i = 0; i < 3; i++) {
          probeTokens.push(failOpen ? ((await h.http.post("/api/login").send({ email, password: STRONG_PASSWORD })).body.token as string) : token);
        }
        owned.pause();
        try {
          if (failOpen) {
            const started = Date.now();
            expect((await h.http.get("/api/checkLogin").set(bearer(token))).status).toBe(200);
            expect(Date.now() - started).toBeLessThan(REVOCATION_TIMEOUT_MS);
          }
          for (const probeToken of probeTokens) {
            const started = Date.now();
            const res = await h.http.get("/api/checkLogin").set(bearer(probeToken));
            const elapsedMs = Date.now() - started;
            if (failOpen) expect(res.status).toBe(200);
            else expectError(res, 503);
            expect(elapsedMs).toBeGreaterThanOrEqual(REVOCATION_TIMEOUT_MS - 50);
            expect(elapsedMs).toBeLessThan(REVOCATION_TIMEOUT_MS + 1500);
          }
          if (failOpen) {
            // Auth passes, the revocation write cannot complete: 503 and the password is unchanged.
            const started = Date.now();
            expectError(await h.http.post("/api/changePassword").set(bearer(token)).send({ oldPassword: STRONG_PASSWORD, newPassword: NEW_PASSWORD }), 503);
            expect(Date.now() - started).toBeLessThan(REVOCATION_TIMEOUT_MS + 1500);
            expect(await h.db.prisma.tokenCutoff.count()).toBe(0);
          }
        } finally {
          owned.resume();
        }
        // The old password still works. (The timed-out cutoff write may still be applied by the
        // waking Redis: that can only revoke the tokens of that moment, never un-revoke; see docs/auth.md.)
        const login = await h.http.post("/api/login").send({ email, password: STRONG_PASSWORD });
        expect(login.status).toBe(200);
        expect((await h.http.post("/api/login").send({ email, password: NEW_PASSWORD })).status).toBe(401);
        await waitFor(async () => (await h.http.get("/api/checkLogin").set(bearer(login.body.token))).status === 200, { what: "auth after the resume" });
      } finally {
        await h.close();
      }
    });
  }
});

describe("AUTH_REVOCATION_FAIL_OPEN=false with Redis stopped", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness({ REDIS_URL: owned.url, AUTH_REVOCATION_FAIL_OPEN: "false", AUTH_REVOCATION_TIMEOUT_MS: String(REVOCATION_TIMEOUT_MS) });
  });
  afterAll(async () => {
    if (!(await probe.ping().catch(() => null))) await owned.start();
    await h.close();
  });

  it("answers 503 {error} promptly instead of serving an unchecked token, and recovers with Redis", async () => {
    const { token, email } = await h.register();
    expect((await h.http.get("/api/checkLogin").set(bearer(token))).status).toBe(200);
    await owned.stop();

    const started = Date.now();
    expectError(await h.http.get("/api/checkLogin").set(bearer(token)), 503);
    expect(Date.now() - started).toBeLessThan(REVOCATION_TIMEOUT_MS + 1500);
    expectError(await h.http.get("/api/user/settings").set(bearer(token)), 503);
    expectError(await h.http.post("/api/changePassword").set(bearer(token)).send({ oldPassword: STRONG_PASSWORD, newPassword: NEW_PASSWORD }), 503);

    await owned.start();
    await waitFor(async () => (await h.http.get("/api/checkLogin").set(bearer(token))).status === 200, { what: "auth to work again" });
    expect((await h.http.post("/api/login").send({ email, password: STRONG_PASSWORD })).status).toBe(200);
  });
});
