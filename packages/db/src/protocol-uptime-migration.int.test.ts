import pg from "pg";
import type { TestDatabase } from "@roost/testkit";
import { migrate } from "./migrate.js";
import { databaseBefore } from "./migrations.test-support.js";

const MIGRATION = "20261127100000_protocol_uptime_window";

/** Cumulative check and success counts become an uptime window of at most 64 results. */
describe(`migration ${MIGRATION}`, () => {
  let database: TestDatabase;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ database, close } = await databaseBefore(MIGRATION));
  });
  afterAll(async () => {
    await close();
  });

  it("keeps min(n, 64) results with the successes as the newest bits", async () => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ('m@example.com', 'x') RETURNING id");
      const userId = rows[0]?.id;
      const counts: [checks: number, successes: number][] = [[0, 0], [3, 0], [3, 3], [10, 4], [63, 63], [64, 64], [1000, 999], [1000, 10]];
      for (const [k, [checks, successes]] of counts.entries()) {
        const proxy = await client.query<{ id: number }>("INSERT INTO proxies (user_id, ip, port) VALUES ($1, '8.8.8.8', $2) RETURNING id", [userId, 1000 + k]);
        await client.query(
          `INSERT INTO proxy_protocol_status (proxy_id, protocol, alive, attempt, response_time, anonymity_level, judge_url, check_count, success_count, checked_at)
           VALUES ($1, 'http', true, 0, 1, 'elite', 'http://j/', $2, $3, now())`,
          [proxy.rows[0]?.id, checks, successes],
        );
      }
      await migrate(database.url);
      const { rows: windows } = await client.query<{ port: number; history_length: number; alive: number }>(
        `SELECT p.port, s.history_length, bit_count(s.history::bit(64))::int AS alive
           FROM proxy_protocol_status s JOIN proxies p ON p.id = s.proxy_id ORDER BY p.port`,
      );
      expect(windows.map((w) => [w.history_length, w.alive])).toEqual([[0, 0], [3, 0], [3, 3], [10, 4], [63, 63], [64, 64], [64, 64], [64, 10]]);
      const { rows: columns } = await client.query<{ column_name: string }>(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'proxy_protocol_status' AND column_name IN ('check_count', 'success_count')",
      );
      expect(columns).toEqual([]);
    } finally {
      await client.end();
    }
  });
});
