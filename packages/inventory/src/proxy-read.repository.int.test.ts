import type pg from "pg";
import { startInventoryHarness, type InventoryHarness } from "./inventory.test-support.js";
import { parseProxyFilters } from "./proxy-read.service.js";
import { proxyPageJson } from "./proxy-page-json.js";
import { buildProxyWhere, type ProxyFilters } from "./proxy-filter.js";
import { countMatchingProxies, FOLD_THRESHOLD, foldUserCounters, selectProxyPageText } from "./proxy-read.repository.js";

/** The reference the page statement must agree with: plain LIMIT/OFFSET paging in id order over the same WHERE clause. */
async function referenceIds(client: pg.ClientBase, userId: number, filters: ProxyFilters, limit: number, offset: number): Promise<string[]> {
  const where = buildProxyWhere(userId, filters, "p", 3);
  const { rows } = await client.query<{ id: number }>(`SELECT p.id FROM proxies p WHERE ${where.text} ORDER BY p.id LIMIT $1 OFFSET $2`, [limit, offset, ...where.params]);
  return rows.map((r) => String(r.id));
}

/** The ids of a page read as one text value, through the writer the route uses. */
const idsOf = (page: string | null): string[] =>
  (JSON.parse(proxyPageJson(page, 0).toString("utf8")) as { proxies: { id: number }[] }).proxies.map((p) => String(p.id));

describe("selectProxyPageText, unfiltered (ids from roost_proxy_page_ids, one cached plan)", () => {
  let h: InventoryHarness;
  let userId: number;
  let otherId: number;
  const unfiltered = parseProxyFilters({});

  beforeAll(async () => {
    h = await startInventoryHarness();
    userId = await h.newUser();
    otherId = await h.newUser();
    // 20,000 rows for the user (enough that a plan for an unknown LIMIT looks costly to the planner),
    // 10,000 for another user interleaved in id order.
    await h.db.pool.query(
      `INSERT INTO proxies (user_id, ip, port, country)
       SELECT CASE WHEN g % 3 = 0 THEN $2::int ELSE $1::int END, '10.' || (g / 65536) || '.' || (g / 256 % 256) || '.' || (g % 256), 8080, 'US'
         FROM generate_series(1, 30000) g`,
      [userId, otherId],
    );
    await h.db.pool.query("ANALYZE proxies");
  });
  afterAll(async () => {
    await h.close();
  });

  /** What the page must be: the deferred join with LIMIT/OFFSET and the exact count. */
  const expected = async (client: pg.PoolClient, limit: number, offset: number) => {
    return { ids: await referenceIds(client, userId, unfiltered, limit, offset), total: await countMatchingProxies(client, userId, unfiltered) };
  };

  it("gives the rows and total of LIMIT/OFFSET paging on every run, also after the plan cache settles on a generic plan", async () => {
    const client = await h.db.pool.connect();
    try {
      // More runs than the 5 custom plans PostgreSQL tries first, with limits and offsets of every kind.
      const pages: [limit: number, offset: number][] = [
        [7, 0], [7, 7], [40, 0], [1, 19_999], [7, 19_996], [100, 0], [40, 20], [7, 20_000], [40, 10_000], [40, 2 ** 31 * 100], [3, 30], [40, 80],
      ];
      for (const [limit, offset] of pages) {
        const { page, total } = await selectProxyPageText(client, userId, unfiltered, limit, offset);
        const ids = idsOf(page);
        const want = await expected(client, limit, offset);
        expect({ ids, total }).toEqual(want);
        expect(ids.length).toBe(Math.max(0, Math.min(limit, 20_000 - offset)));
      }
      const { rows } = await client.query<{ generic_plans: string }>(
        "SELECT generic_plans FROM pg_prepared_statements WHERE name = 'roost_proxy_page_unfiltered'",
      );
      // The point of the function: the page statement is no longer planned per request.
      expect(Number(rows[0]?.generic_plans)).toBeGreaterThan(0);
    } finally {
      client.release();
    }
  });

  it("folds the counters' delta log once a page had to sum more than FOLD_THRESHOLD rows of it, keeping the total", async () => {
    const countryRows = async () =>
      Number((await h.db.pool.query<{ n: string }>("SELECT count(*) AS n FROM user_proxy_counts WHERE user_id = $1 AND dimension = 'country'", [userId])).rows[0]?.n);
    // Each statement that moves a proxy to another country logs two delta rows.
    const { rows: some } = await h.db.pool.query<{ id: number }>("SELECT id FROM proxies WHERE user_id = $1 ORDER BY id LIMIT 2", [userId]);
    for (let k = 0; (await countryRows()) <= FOLD_THRESHOLD; k++) {
      await h.db.pool.query("UPDATE proxies SET country = $2 WHERE id = $1", [some[k % 2]?.id, k % 3 === 0 ? "DE" : "FR"]);
    }
    const before = await selectProxyPageText(h.db.pool, userId, unfiltered, 40, 0);
    expect(before.total).toBe(20_000);
    // The read that saw the long log folded it: one row per country left (US, DE, FR at most).
    expect(await countryRows()).toBeLessThanOrEqual(3);
    expect((await selectProxyPageText(h.db.pool, userId, unfiltered, 40, 0)).total).toBe(20_000);
  });

  it("never returns another user's rows", async () => {
    const { page, total } = await selectProxyPageText(h.db.pool, otherId, unfiltered, 100, 0);
    expect(total).toBe(10_000);
    const ids = idsOf(page).map(Number);
    expect(ids).toHaveLength(100);
    const owners = await h.db.pool.query<{ user_id: number }>("SELECT DISTINCT user_id FROM proxies WHERE id = ANY($1::int[])", [ids]);
    expect(owners.rows).toEqual([{ user_id: otherId }]);
  });
});

describe("totals of the Alive / Dead filter (the counters' alive dimension)", () => {
  let h: InventoryHarness;
  let userId: number;
  let otherId: number;
  const alive = parseProxyFilters({ status: "alive" });
  const dead = parseProxyFilters({ status: "dead" });

  beforeAll(async () => {
    h = await startInventoryHarness();
    userId = await h.newUser();
    otherId = await h.newUser();
  });
  afterAll(async () => {
    await h.close();
  });

  /** count(*) of each status, the ground truth. */
  const truth = async (owner: number) => {
    const { rows } = await h.db.pool.query<{ alive: number; dead: number }>(
      "SELECT count(*) FILTER (WHERE alive)::int AS alive, count(*) FILTER (WHERE NOT alive)::int AS dead FROM proxies WHERE user_id = $1",
      [owner],
    );
    return rows[0];
  };
  const totals = async (owner: number) => ({
    alive: (await selectProxyPageText(h.db.pool, owner, alive, 40, 0)).total,
    dead: (await selectProxyPageText(h.db.pool, owner, dead, 40, 0)).total,
  });

  it("stays exact through inserts, flips both ways, deletes and a fold, per user", async () => {
    // Each user: 300 proxies, every third alive, the two users' rows interleaved in id order.
    await h.db.pool.query(
      `INSERT INTO proxies (user_id, ip, port, alive, alive_protocols)
       SELECT CASE WHEN g % 2 = 0 THEN $1::int ELSE $2::int END, '11.' || (g % 2) || '.' || (g / 256) || '.' || (g % 256), 8080,
              (g / 2) % 3 = 0, CASE WHEN (g / 2) % 3 = 0 THEN 1 ELSE 0 END
         FROM generate_series(0, 599) g`,
      [userId, otherId],
    );
    expect(await totals(userId)).toEqual(await truth(userId));
    // A checker batch: some die, some come alive, some stay as they were.
    await h.db.pool.query(
      `UPDATE proxies SET alive = NOT alive, alive_protocols = CASE WHEN alive THEN 0 ELSE 8 END WHERE user_id = $1 AND id % 5 = 0`,
      [userId],
    );
    await h.db.pool.query("UPDATE proxies SET response_time = 100 WHERE user_id = $1 AND alive", [userId]);
    await h.db.pool.query("DELETE FROM proxies WHERE user_id = $1 AND id % 7 = 0", [userId]);
    const expected = await truth(userId);
    expect(expected).not.toEqual({ alive: 100, dead: 200 });
    expect(await totals(userId)).toEqual(expected);
    expect(await countMatchingProxies(h.db.pool, userId, alive)).toBe(expected?.alive);
    expect(await countMatchingProxies(h.db.pool, userId, dead)).toBe(expected?.dead);
    // The other user's counts did not move.
    expect(await totals(otherId)).toEqual({ alive: 100, dead: 200 });
    // A page past the end still has the true total.
    expect((await selectProxyPageText(h.db.pool, userId, dead, 40, 10_000)).total).toBe(expected?.dead);
    // Folded into one row per key, the same.
    await foldUserCounters(h.db.pool, userId);
    const { rows } = await h.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM user_proxy_counts WHERE user_id = $1 AND dimension = 'alive'", [userId]);
    expect(rows[0]?.n).toBe(2);
    expect(await totals(userId)).toEqual(expected);
  });

  it("gives the rows of LIMIT/OFFSET paging from the prepared statement, on every run and after it settles on a generic plan", async () => {
    const client = await h.db.pool.connect();
    try {
      const pages: [limit: number, offset: number][] = [[7, 0], [40, 0], [40, 40], [1, 150], [100, 0], [40, 5_000], [3, 30], [40, 80], [7, 7], [40, 60]];
      for (const filters of [alive, dead]) {
        for (const [limit, offset] of pages) {
          const { page, total } = await selectProxyPageText(client, userId, filters, limit, offset);
          const want = await referenceIds(client, userId, filters, limit, offset);
          expect({ status: filters.status, limit, offset, ids: idsOf(page) }).toEqual({ status: filters.status, limit, offset, ids: want });
          expect(total).toBe(await countMatchingProxies(client, userId, filters));
        }
      }
      // Never the other user's rows.
      const { page } = await selectProxyPageText(client, otherId, dead, 100, 0);
      const owners = await client.query<{ user_id: number }>("SELECT DISTINCT user_id FROM proxies WHERE id = ANY($1::int[])", [idsOf(page).map(Number)]);
      expect(owners.rows).toEqual([{ user_id: otherId }]);
      const { rows } = await client.query<{ generic_plans: string }>("SELECT generic_plans FROM pg_prepared_statements WHERE name = 'roost_proxy_page_status'");
      expect(Number(rows[0]?.generic_plans)).toBeGreaterThan(0);
    } finally {
      client.release();
    }
  });

  it("reads the counters, not a count(*)", async () => {
    const before = await totals(userId);
    await h.db.pool.query("INSERT INTO user_proxy_counts (user_id, dimension, value, delta) VALUES ($1, 'alive', 'false', 1000)", [userId]);
    try {
      expect(await totals(userId)).toEqual({ alive: before.alive, dead: before.dead + 1000 });
      expect(await countMatchingProxies(h.db.pool, userId, dead)).toBe(before.dead + 1000);
    } finally {
      await h.db.pool.query("DELETE FROM user_proxy_counts WHERE user_id = $1 AND dimension = 'alive' AND delta = 1000", [userId]);
    }
    // With another filter beside the status, the total is a count(*) again.
    const aliveInUs = parseProxyFilters({ status: "alive", country: "US" });
    const { rows } = await h.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM proxies WHERE user_id = $1 AND alive AND country = 'US'", [userId]);
    expect(await countMatchingProxies(h.db.pool, userId, aliveInUs)).toBe(rows[0]?.n);
  });
});
