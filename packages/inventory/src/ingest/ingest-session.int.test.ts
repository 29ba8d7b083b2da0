import pg from "pg";
import type { GeoDatabase } from "@roost/geo";
import { startInventoryHarness, type InventoryHarness } from "../inventory.test-support.js";
import { ProxyUploadSession, type UploadPool } from "./ingest-session.js";

/**
 * The upload session across batch boundaries (batches of 2 here; 10,000 in
 * production): duplicates of proxies whose batch is already stored or still
 * in flight, blacklist refusals that arrive after later duplicates were
 * read, proxies the user owns, and proxy_limits, all counted exactly.
 */
describe("ProxyUploadSession across batches", () => {
  let h: InventoryHarness;
  let geo: GeoDatabase;
  beforeAll(async () => {
    h = await startInventoryHarness();
    geo = await h.geo();
  });
  afterAll(async () => {
    await h.close();
  });
  beforeEach(async () => {
    await h.db.pool.query("DELETE FROM blacklist_ranges");
  });

  async function run(userId: number, chunks: string[], maxProxies: number | null = null) {
    const session = await ProxyUploadSession.open({ pool: h.db.pool, geo, userId, allowPrivateTargets: false, maxProxies, batchSize: 2 });
    // One line per write: every batch boundary falls between lines.
    for (const chunk of chunks) await session.write(Buffer.from(`${chunk}\n`));
    return session.commit();
  }
  const stored = async (userId: number) =>
    (
      await h.db.pool.query<{ id: number; proxy: string }>(
        "SELECT id, ip || ':' || port || CASE WHEN username <> '' THEN ':' || username || ':' || password ELSE '' END AS proxy FROM proxies WHERE user_id = $1 ORDER BY id",
        [userId],
      )
    ).rows;
  const newUser = async () => h.newUser();

  it("stores every distinct proxy once, in order of first appearance, whatever batch its repeats fall in", async () => {
    const userId = await newUser();
    const lines = ["8.8.1.1:80", "8.8.1.2:80", "8.8.1.1:80", "8.8.1.3:80:u:p", "8.8.1.2:80", "8.8.1.3:80:u:p", "8.8.1.3:80:U:p", "8.8.1.1:80", "8.8.1.4:81"];
    const outcome = await run(userId, lines);
    expect(outcome.details).toMatchObject({ submittedCount: 9, parsedCount: 9, blacklistedCount: 0 });
    expect(outcome.proxyCount).toBe(5);
    const rows = await stored(userId);
    expect(rows.map((r) => r.proxy)).toEqual(["8.8.1.1:80", "8.8.1.2:80", "8.8.1.3:80:u:p", "8.8.1.3:80:U:p", "8.8.1.4:81"]);
    expect(outcome.newProxyIds).toEqual(rows.map((r) => r.id));
  });

  it("counts every line of a blacklisted proxy, also repeats read before and after its batch was refused", async () => {
    const userId = await newUser();
    await h.db.pool.query("INSERT INTO blacklist_ranges (cidr, source) VALUES ('8.8.2.0/24', 'test')");
    const lines = ["8.8.2.1:80", "9.9.2.1:80", "8.8.2.1:80", "9.9.2.2:80", "8.8.2.1:80", "8.8.2.2:80", "9.9.2.1:80", "8.8.2.2:80", "8.8.2.1:80"];
    const outcome = await run(userId, lines);
    expect(outcome.details).toMatchObject({ parsedCount: 9, blacklistedCount: 6 });
    expect(outcome.proxyCount).toBe(2);
    expect((await stored(userId)).map((r) => r.proxy)).toEqual(["9.9.2.1:80", "9.9.2.2:80"]);
  });

  it("reports the new ids of every batch, also when a whole batch was refused as blacklisted", async () => {
    const userId = await newUser();
    await h.db.pool.query("INSERT INTO blacklist_ranges (cidr, source) VALUES ('8.8.2.0/24', 'test')");
    // Batches of two distinct proxies: the second is blacklisted whole and stores nothing.
    const outcome = await run(userId, ["9.9.4.1:80", "9.9.4.2:80", "8.8.2.3:80", "8.8.2.4:80", "9.9.4.3:80"]);
    expect(outcome.details).toMatchObject({ parsedCount: 5, blacklistedCount: 2 });
    const rows = await stored(userId);
    expect(rows.map((r) => r.proxy)).toEqual(["9.9.4.1:80", "9.9.4.2:80", "9.9.4.3:80"]);
    expect(outcome.newProxyIds).toEqual(rows.map((r) => r.id));
  });

  it("skips proxies the user already has and still counts them in proxyCount", async () => {
    const userId = await newUser();
    await run(userId, ["8.8.3.1:80", "8.8.3.2:80", "8.8.3.3:80"]);
    const before = await stored(userId);
    const outcome = await run(userId, ["8.8.3.4:80", "8.8.3.2:80", "8.8.3.5:80", "8.8.3.1:80", "8.8.3.4:80"]);
    expect(outcome.proxyCount).toBe(4);
    const after = await stored(userId);
    expect(after.slice(0, 3)).toEqual(before);
    expect(after.map((r) => r.proxy)).toEqual(["8.8.3.1:80", "8.8.3.2:80", "8.8.3.3:80", "8.8.3.4:80", "8.8.3.5:80"]);
    expect(outcome.newProxyIds).toEqual(after.slice(3).map((r) => r.id));
  });

  it("fills the room under proxy_limits in upload order and counts the rest", async () => {
    const userId = await newUser();
    await run(userId, ["8.8.4.1:80"]);
    const outcome = await run(userId, ["8.8.4.2:80", "8.8.4.1:80", "8.8.4.3:80", "8.8.4.4:80", "8.8.4.2:80", "8.8.4.5:80"], 3);
    expect(outcome.details.limitExceededCount).toBe(2);
    expect(outcome.proxyCount).toBe(3);
    expect((await stored(userId)).map((r) => r.proxy)).toEqual(["8.8.4.1:80", "8.8.4.2:80", "8.8.4.3:80"]);
  });

  it("lets the event loop run while it reads a large text field that never fills a batch", async () => {
    const userId = await newUser();
    const session = await ProxyUploadSession.open({ pool: h.db.pool, geo, userId, allowPrivateTargets: false, maxProxies: null });
    // 1 MiB of lines that are no proxies: no batch ever reaches the database.
    const junk = "no proxy here\n".repeat(75_000);
    let turns = 0;
    let reading = true;
    const spin = (): void => {
      turns++;
      if (reading) setImmediate(spin);
    };
    setImmediate(spin);
    await session.writeText(junk);
    reading = false;
    await session.abort();
    // One turn per 16 KiB slice, about 64; read in one go there would be none.
    expect(turns).toBeGreaterThan(30);
  });

  describe("on two connections", () => {
    /** `pool` whose connections are counted with the COPY statements each sent while the upload held it. */
    const counting = (pool: pg.Pool): UploadPool & { copies: number[] } => {
      const counted = {
        copies: [] as number[],
        connect: async () => {
          const client = await pool.connect();
          const slot = counted.copies.push(0) - 1;
          const { query, release } = client;
          const watched = (...args: unknown[]): unknown => {
            const text = typeof args[0] === "object" && args[0] !== null && "text" in args[0] ? String(args[0].text) : "";
            if (/\bCOPY proxies\b/.test(text)) counted.copies[slot] = (counted.copies[slot] ?? 0) + 1;
            return (query as (...a: unknown[]) => unknown).apply(client, args);
          };
          client.query = watched as typeof client.query;
          client.release = (...args: Parameters<typeof release>) => {
            client.query = query;
            client.release = release;
            release.apply(client, args);
          };
          return client;
        },
        query: pool.query.bind(pool) as pg.Pool["query"],
        get idleCount() {
          return pool.idleCount;
        },
        get totalCount() {
          return pool.totalCount;
        },
        get waitingCount() {
          return pool.waitingCount;
        },
        options: pool.options,
      };
      return counted;
    };
    const lines = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}.${Math.floor(i / 250)}.${i % 250}:8080`);
    const idleInTransaction = async () =>
      (await h.db.pool.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'")).rowCount;

    it("stores every other batch on a second connection, ids in upload order, both committed", async () => {
      const userId = await newUser();
      const pool = counting(h.db.pool);
      const input = lines("8.9", 60);
      const session = await ProxyUploadSession.open({ pool, geo, userId, allowPrivateTargets: false, maxProxies: null, batchSize: 4 });
      for (const line of input) await session.write(Buffer.from(`${line}\n`));
      const outcome = await session.commit();
      // 15 batches: the first two on the first connection (the second is opened meanwhile), then in turn.
      expect(pool.copies).toHaveLength(2);
      expect(pool.copies.every((copies) => copies >= 5)).toBe(true);
      expect(pool.copies[0]! + pool.copies[1]!).toBe(15);
      const rows = await stored(userId);
      expect(rows.map((r) => r.proxy)).toEqual(input);
      expect(outcome.newProxyIds).toEqual(rows.map((r) => r.id));
      expect(outcome.proxyCount).toBe(60);
      // Both connections went back to the pool outside a transaction.
      expect(await idleInTransaction()).toBe(0);
    });

    it("shows nothing before the commit, and an abort rolls back both connections", async () => {
      const userId = await newUser();
      const pool = counting(h.db.pool);
      const session = await ProxyUploadSession.open({ pool, geo, userId, allowPrivateTargets: false, maxProxies: null, batchSize: 4 });
      for (const line of lines("8.10", 60)) await session.write(Buffer.from(`${line}\n`));
      expect(pool.copies.map((copies) => copies > 0)).toEqual([true, true]);
      expect(await stored(userId)).toEqual([]);
      await session.abort();
      expect(await stored(userId)).toEqual([]);
      expect(await idleInTransaction()).toBe(0);
    });

    it("stays on one connection when the pool has none to spare, or under proxy_limits", async () => {
      const small = new pg.Pool({ connectionString: h.database.url, max: 1 });
      try {
        const userId = await newUser();
        const pool = counting(small);
        const session = await ProxyUploadSession.open({ pool, geo, userId, allowPrivateTargets: false, maxProxies: null, batchSize: 4 });
        for (const line of lines("8.11", 40)) await session.write(Buffer.from(`${line}\n`));
        await session.commit();
        expect([pool.copies, (await stored(userId)).length]).toEqual([[10], 40]);
      } finally {
        await small.end();
      }
      const limited = await newUser();
      const pool = counting(h.db.pool);
      const session = await ProxyUploadSession.open({ pool, geo, userId: limited, allowPrivateTargets: false, maxProxies: 30, batchSize: 4 });
      for (const line of lines("8.12", 40)) await session.write(Buffer.from(`${line}\n`));
      const outcome = await session.commit();
      expect([pool.copies.length, outcome.details.limitExceededCount, (await stored(limited)).length]).toEqual([1, 10, 30]);
    });
  });
});
