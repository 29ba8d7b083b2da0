import { createDatabase, type Database } from "@roost/db";
import { OutboundGuard } from "@roost/net";
import pg from "pg";
import { createTestDatabase, peerBinariesAvailable, waitFor, startNginxListServer, type NginxListServer, type TestDatabase } from "@roost/testkit";
import { parseBlacklist, refreshBlacklists } from "./blacklist-refresh.job.js";

describe("parseBlacklist", () => {
  it("reads plain addresses, CIDRs and the DROP list's `CIDR ; SBLnnn` lines, skipping comments and junk", () => {
    const text = ["; Spamhaus DROP List", "1.10.16.0/20 ; SBL256894", "8.8.8.8", "# comment", "2001:db8::/32", "999.1.1.1/8", "1.2.3.0/33", "words here", "5.6.7.8/24/1", ""].join("\n");
    expect(parseBlacklist(text)).toEqual(["1.10.16.0/20", "8.8.8.8/32", "2001:db8::/32"]);
  });
});

const describePeers = peerBinariesAvailable("nginx") ? describe : describe.skip;

/** Refreshes against a list served by nginx; the guard lets only that server's address through. */
describePeers("refreshBlacklists", () => {
  let database: TestDatabase;
  let db: Database;
  let lists: NginxListServer;
  let guard: OutboundGuard;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = createDatabase({ databaseUrl: database.url });
    lists = await startNginxListServer({ host: "127.0.0.15" });
    guard = new OutboundGuard({ allowAddress: ({ address }) => address === lists.host });
  });
  afterAll(async () => {
    await lists?.stop();
    await db?.close();
    await database?.drop();
  });

  const setSources = (sources: string[]) =>
    db.pool.query("INSERT INTO global_config (id, config) VALUES (1, $1::jsonb) ON CONFLICT (id) DO UPDATE SET config = EXCLUDED.config", [
      JSON.stringify({ blacklist_sources: sources, blacklist_interval_seconds: 60 }),
    ]);
  const ranges = async () => (await db.pool.query<{ cidr: string }>("SELECT cidr::text FROM blacklist_ranges ORDER BY cidr")).rows.map((row) => row.cidr);
  const ipsOf = async (userId: number) => (await db.pool.query<{ ip: string }>("SELECT ip FROM proxies WHERE user_id = $1 ORDER BY ip", [userId])).rows.map((row) => row.ip);

  it("stores the ranges, removes proxies inside them, keeps them when the source fails, and drops them when the source goes", async () => {
    const url = `${lists.origin}/drop.txt`;
    await lists.put("drop.txt", "8.8.0.0/16 ; SBL1\n9.9.9.9\n");
    await setSources([url]);
    const user = (await db.pool.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ('bl@example.com', 'x') RETURNING id")).rows[0]?.id ?? 0;
    await db.pool.query("INSERT INTO proxies (user_id, ip, port) VALUES ($1, '8.8.1.1', 80), ($1, '8.9.1.1', 80), ($1, '9.9.9.9', 80), ($1, '9.9.9.10', 80)", [user]);

    const first = await refreshBlacklists(db.pool, guard);
    expect(first).toMatchObject({ refreshed: [url], failed: [], removedProxies: 2 });
    expect(await ranges()).toEqual(["8.8.0.0/16", "9.9.9.9/32"]);
    expect(await ipsOf(user)).toEqual(["8.9.1.1", "9.9.9.10"]);
    const counts = await db.pool.query<{ n: string }>("SELECT coalesce(sum(delta), 0)::text AS n FROM user_proxy_counts WHERE user_id = $1 AND dimension = 'country'", [user]);
    expect(counts.rows[0]?.n).toBe("2");

    // Fresh: not fetched again within the interval.
    expect((await refreshBlacklists(db.pool, guard)).refreshed).toEqual([]);
    expect((await lists.requests()).filter((r) => r.path === "/drop.txt")).toHaveLength(1);

    // Due again: a source that now lists nothing has no ranges; one that fails (404) keeps its previous ones.
    await db.pool.query("UPDATE blacklist_ranges SET updated_at = now() - interval '1 hour'");
    await lists.put("drop.txt", "");
    const missing = `${lists.origin}/gone.txt`;
    await setSources([url, missing]);
    const failing = await refreshBlacklists(db.pool, guard);
    expect(failing.failed).toEqual([{ source: missing, error: "HTTP 404" }]);
    expect(await ranges()).toEqual([]);
    await lists.put("drop.txt", "8.8.0.0/16\n");
    await db.pool.query("INSERT INTO blacklist_ranges (cidr, source) VALUES ('7.7.0.0/16', $1)", [missing]);
    await db.pool.query("UPDATE blacklist_ranges SET updated_at = now() - interval '1 hour'");
    const again = await refreshBlacklists(db.pool, guard);
    expect(again.failed).toEqual([{ source: missing, error: "HTTP 404" }]);
    expect(await ranges()).toEqual(["7.7.0.0/16", "8.8.0.0/16"]);

    // A source refused by the guard fails like any other, and a source removed from the configuration takes its ranges along.
    await setSources([url, "http://127.0.0.1/drop.txt"]);
    const refused = await refreshBlacklists(db.pool, guard);
    expect(refused.failed).toEqual([{ source: "http://127.0.0.1/drop.txt", error: expect.stringMatching(/refused/) }]);
    expect(refused.droppedRanges).toBe(1);
    expect(await ranges()).toEqual(["8.8.0.0/16"]);
  });
  it("removes proxies with the long-statement deadline: a delete waiting on a lock past the pool's statement_timeout still finishes", async () => {
    const limited = createDatabase({ databaseUrl: database.url, statementTimeoutMs: 300 });
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    try {
      const url = `${lists.origin}/locked.txt`;
      await lists.put("locked.txt", "6.6.6.0/24\n");
      await setSources([url]);
      const user = (await db.pool.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ('lock@example.com', 'x') RETURNING id")).rows[0]?.id ?? 0;
      await db.pool.query("INSERT INTO proxies (user_id, ip, port) VALUES ($1, '6.6.6.6', 80)", [user]);
      await locker.query("BEGIN");
      await locker.query("SELECT id FROM proxies WHERE user_id = $1 FOR UPDATE", [user]);
      const refreshing = refreshBlacklists(limited.pool, guard, 60_000);
      await waitFor(
        async () =>
          (
            await db.pool.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM proxies p WHERE EXISTS%' AND now() - query_start > interval '800 ms'`,
            )
          ).rows[0]?.n === 1,
        { timeoutMs: 10_000, what: "the delete waiting past the statement timeout" },
      );
      await locker.query("COMMIT");
      expect(await refreshing).toMatchObject({ refreshed: [url], removedProxies: 1 });
      expect(await ipsOf(user)).toEqual([]);
    } finally {
      await locker.end();
      await limited.close();
    }
  });
});
