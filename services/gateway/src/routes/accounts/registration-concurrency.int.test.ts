import pg from "pg";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { HIGH_LIMIT } from "../../test-support/rate-limit-checks.js";
import { REGISTRATION_LOCK_WAIT_MS } from "./account.repository.js";

/**
 * Concurrent registrations queue for the registration lock (held here by
 * another session, as a slow holder or a burst would): within the explicit
 * lock wait they all succeed; past it they answer 503 with Retry-After, never 500.
 */
const REGISTRATION_LOCK = 7370_0001;
const CONCURRENT = 16;

describe("concurrent registrations", () => {
  let h: GatewayHarness;
  let holder: pg.Client;
  beforeEach(async () => {
    h = await startGatewayHarness({ RATE_LIMIT_REGISTER_PER_MINUTE: HIGH_LIMIT });
    holder = new pg.Client({ connectionString: h.database.url });
    await holder.connect();
  });
  afterEach(async () => {
    await holder.end();
    await h.close();
  });

  /** Holds the lock, sends the registrations, releases it after `holdMs`, returns every answer. */
  async function registerWhileLockHeld(holdMs: number) {
    await holder.query("BEGIN");
    await holder.query("SELECT pg_advisory_xact_lock($1)", [REGISTRATION_LOCK]);
    const answers = Promise.all(
      Array.from({ length: CONCURRENT }, (_, i) => h.http.post("/api/register").send({ email: `burst${i}@example.com`, password: STRONG_PASSWORD })),
    );
    // Every registration is waiting for the lock (or for a pooled connection, behind those that are).
    await waitFor(
      async () => {
        const { rows } = await holder.query<{ waiting: number }>(
          "SELECT count(*)::int AS waiting FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = $1",
          [REGISTRATION_LOCK],
        );
        return (rows[0]?.waiting ?? 0) >= 1;
      },
      { what: "registrations waiting for the lock" },
    );
    const releaseAt = Date.now() + holdMs;
    await waitFor(async () => Date.now() >= releaseAt, { timeoutMs: holdMs + 1_000, intervalMs: 50, what: "the hold to end" });
    await holder.query("COMMIT");
    return answers;
  }

  it(`${CONCURRENT} at once behind a lock held 4 s (more than the pool's 10 connections wait): all 201`, async () => {
    const answers = await registerWhileLockHeld(4_000);
    expect(answers.map((res) => res.status)).toEqual(Array<number>(CONCURRENT).fill(201));
    expect(await h.db.prisma.user.count()).toBe(CONCURRENT);
    expect(await h.db.prisma.user.count({ where: { role: "admin" } })).toBe(1);
  }, 30_000);

  it("past the explicit lock wait: 503 {error} with Retry-After, never 500, nothing created", async () => {
    const answers = await registerWhileLockHeld(REGISTRATION_LOCK_WAIT_MS + 1_500);
    for (const res of answers) {
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: expect.any(String) });
      expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    }
    expect(await h.db.prisma.user.count()).toBe(0);
  }, 30_000);
});
