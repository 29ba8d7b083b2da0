import http from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { userIdOfToken } from "../../test-support/proxy-fixtures.js";

/**
 * Exports and bulk deletes run under DATABASE_LONG_STATEMENT_TIMEOUT_MS, not
 * the pool's per-query deadlines: a client that reads slowly, or a delete
 * that waits for a lock, outlasts those without being cut off.
 */
describe("long statements", () => {
  let h: GatewayHarness;
  let port: number;
  // The test's own set-up runs on a connection without the gateway's short deadlines.
  let setup: pg.Client;
  // Deadlines short enough to be outlasted in seconds, long enough that the gateway's ordinary
  // statements (start-up, register, auth) never meet them on a loaded CI host.
  beforeAll(async () => {
    h = await startGatewayHarness({ DATABASE_QUERY_TIMEOUT_MS: "3000", DATABASE_STATEMENT_TIMEOUT_MS: "2500", DATABASE_LONG_STATEMENT_TIMEOUT_MS: "60000" });
    ({ port } = (await h.service.start()) as AddressInfo);
    setup = new pg.Client({ connectionString: h.database.url });
    await setup.connect();
  });
  afterAll(async () => {
    await setup.end();
    await h.close();
  });

  it("streams a whole export to a client that stops reading for longer than the pool's query deadline", async () => {
    const { token } = await h.register();
    const userId = await userIdOfToken(h, token);
    await setup.query(
      `INSERT INTO proxies (user_id, ip, port) SELECT $1, '8.' || (g / 65536) || '.' || (g / 256 % 256) || '.' || (g % 256), 8080 FROM generate_series(1, 60000) g`,
      [userId],
    );
    const lines = await new Promise<number>((resolve, reject) => {
      const req = http.request({ port, host: "127.0.0.1", method: "POST", path: "/api/user/export", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" } }, (res) => {
        expect(res.statusCode).toBe(200);
        let count = 0;
        res.pause();
        // 5 s without reading: the socket fills, the COPY waits, well past the 3 s query deadline.
        setTimeout(() => {
          res.on("data", (chunk: Buffer) => {
            for (const byte of chunk) if (byte === 10) count++;
          });
          res.on("end", () => resolve(count));
          res.resume();
        }, 5000);
      });
      req.on("error", reject);
      // About 30 MB in all: far more than the socket buffers hold, so the COPY really waits for the reader.
      req.end(JSON.stringify({ outputFormat: `ip:port ${"x".repeat(500)}` }));
    });
    expect(lines).toBe(60000);
  }, 30_000);

  it("lets a bulk delete wait for a lock longer than the session's statement_timeout", async () => {
    const { token } = await h.register();
    const userId = await userIdOfToken(h, token);
    await setup.query("INSERT INTO proxies (user_id, ip, port) SELECT $1, '9.9.9.' || g, 80 FROM generate_series(1, 10) g", [userId]);
    const locker = new pg.Client({ connectionString: h.database.url });
    await locker.connect();
    try {
      await locker.query("BEGIN");
      await locker.query("SELECT id FROM proxies WHERE user_id = $1 FOR UPDATE", [userId]);
      const deleting = h.http.delete("/api/proxies").set("Authorization", `Bearer ${token}`).send({ scope: "all" }).then((res) => res);
      // The delete has waited on the lock for longer than the session's 2.5 s statement_timeout; then the lock goes.
      await waitFor(
        async () =>
          (
            await setup.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM proxies%' AND now() - query_start > interval '3000 ms'`,
            )
          ).rows[0]?.n === 1,
        { timeoutMs: 10_000, what: "the delete waiting past the statement timeout" },
      );
      await locker.query("COMMIT");
      const res = await deleting;
      expect([res.status, res.body]).toEqual([200, "Deleted 10 proxies."]);
    } finally {
      await locker.end();
    }
  }, 30_000);
});
