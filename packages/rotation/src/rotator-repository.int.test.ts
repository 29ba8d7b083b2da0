import { createTestDatabase, type TestDatabase } from "@roost/testkit";
import pg from "pg";

import { countRotatorUpstreams, loadInstanceRotators, loadRotatorUpstreams, rotatorUpstreamAfter } from "./rotator-repository.js";

describe("rotator repository", () => {
  let database: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    database = await createTestDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  });

  afterAll(async () => {
    await pool.end();
    await database.drop();
  });

  const user = async (): Promise<number> =>
    (await pool.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ('r' || gen_random_uuid() || '@example.com', 'x') RETURNING id")).rows[0]?.id ?? 0;

  interface ProxySeed {
    port: number;
    aliveProtocols: number;
    label?: string;
    country?: string;
    /** Status row for the protocol: history bits and how many hold results. */
    history?: { protocol: string; bits: bigint; length: number };
  }

  const proxy = async (userId: number, seed: ProxySeed): Promise<number> => {
    const id =
      (
        await pool.query<{ id: number }>(
          `INSERT INTO proxies (user_id, ip, port, username, password, alive, alive_protocols, reputation_label, country)
           VALUES ($1, '198.51.100.1', $2, 'u', 'p', $3 <> 0, $3, $4, $5) RETURNING id`,
          [userId, seed.port, seed.aliveProtocols, seed.label ?? "good", seed.country ?? "N/A"],
        )
      ).rows[0]?.id ?? 0;
    if (seed.history) {
      await pool.query(
        `INSERT INTO proxy_protocol_status (proxy_id, protocol, alive, attempt, response_time, anonymity_level, judge_url, history, history_length, checked_at)
         VALUES ($1, $2, true, 1, 10, 'elite', 'http://judge/', $3, $4, now())`,
        [id, seed.history.protocol, seed.history.bits.toString(), seed.history.length],
      );
    }
    return id;
  };

  const rotator = async (userId: number, fields: { name: string; protocol: string; labels?: string[]; filter?: ["min" | "max", number]; port: number }): Promise<number> =>
    (
      await pool.query<{ id: number }>(
        `INSERT INTO rotating_proxies (user_id, name, instance_id, protocol, listen_protocol, listen_port, reputation_labels, uptime_filter_type, uptime_percentage)
         VALUES ($1, $2, 'inst-a', $3, 'http', $4, $5, $6, $7) RETURNING id`,
        [userId, fields.name, fields.protocol, fields.port, fields.labels ?? [], fields.filter?.[0] ?? null, fields.filter?.[1] ?? null],
      )
    ).rows[0]?.id ?? 0;

  it("selects the owner's proxies alive on the rotator's protocol, by label and uptime window", async () => {
    const owner = await user();
    const other = await user();
    // Bits: http=1, https=2, socks4=4, socks5=8.
    const httpGood = await proxy(owner, { port: 1001, aliveProtocols: 1, label: "good", country: "DE", history: { protocol: "http", bits: 0b1111n, length: 4 } });
    const httpPoor = await proxy(owner, { port: 1002, aliveProtocols: 3, label: "poor", history: { protocol: "http", bits: 0b0001n, length: 4 } });
    const socksOnly = await proxy(owner, { port: 1003, aliveProtocols: 8, label: "good" });
    await proxy(owner, { port: 1004, aliveProtocols: 0, label: "good" });
    await proxy(other, { port: 1005, aliveProtocols: 1, label: "good" });

    const all = await rotator(owner, { name: "all", protocol: "http", port: 20001 });
    const goodOnly = await rotator(owner, { name: "good", protocol: "http", labels: ["good"], port: 20002 });
    const atLeast50 = await rotator(owner, { name: "min", protocol: "http", filter: ["min", 50], port: 20003 });
    const atMost25 = await rotator(owner, { name: "max", protocol: "http", filter: ["max", 25], port: 20004 });
    const socks = await rotator(owner, { name: "socks", protocol: "socks5", port: 20005 });
    const https = await rotator(owner, { name: "https", protocol: "https", port: 20006 });

    const pools = await loadRotatorUpstreams(pool, [all, goodOnly, atLeast50, atMost25, socks, https]);
    const ids = (rotatorId: number) => pools.get(rotatorId)?.map((u) => u.proxyId);
    expect(ids(all)).toEqual([httpGood, httpPoor]);
    expect(ids(goodOnly)).toEqual([httpGood]);
    expect(ids(atLeast50)).toEqual([httpGood]);
    expect(ids(atMost25)).toEqual([httpPoor]);
    expect(ids(socks)).toEqual([socksOnly]);
    expect(ids(https)).toEqual([httpPoor]);
    expect(pools.get(all)?.[0]).toEqual({ proxyId: httpGood, ip: "198.51.100.1", port: 1001, username: "u", password: "p", country: "DE" });

    const counts = await countRotatorUpstreams(pool, [all, goodOnly, atLeast50, atMost25, socks, https]);
    expect([...counts.entries()]).toEqual([all, goodOnly, atLeast50, atMost25, socks, https].map((id) => [id, ids(id)?.length]));
    expect((await rotatorUpstreamAfter(pool, all, 0))?.proxyId).toBe(httpGood);
    expect((await rotatorUpstreamAfter(pool, all, httpGood))?.proxyId).toBe(httpPoor);
    expect((await rotatorUpstreamAfter(pool, all, httpPoor))?.proxyId).toBe(httpGood);
    expect((await rotatorUpstreamAfter(pool, goodOnly, httpPoor))?.proxyId).toBe(httpGood);

    const definitions = await loadInstanceRotators(pool, "inst-a");
    expect(definitions.map((d) => d.name)).toEqual(["all", "good", "min", "max", "socks", "https"]);
    expect(await rotatorUpstreamAfter(pool, await rotator(other, { name: "empty", protocol: "socks4", port: 20007 }), 0)).toBeUndefined();
    expect(definitions[2]).toMatchObject({ uptimeFilterType: "min", uptimePercentage: 50, authRequired: false, listenProtocol: "http" });
  });
});
