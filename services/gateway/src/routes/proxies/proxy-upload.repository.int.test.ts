import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { userIdOfToken } from "../../test-support/proxy-fixtures.js";
import { copyNewProxies, type ProxyInsertBatch } from "./proxy-upload.repository.js";

const batchOf = (ips: string[]): ProxyInsertBatch => ({
  ip: ips,
  port: ips.map(() => 8080),
  username: ips.map(() => ""),
  password: ips.map(() => ""),
  schemeHint: ips.map(() => null),
  country: ips.map(() => "US"),
  asn: ips.map(() => null),
  estimatedType: ips.map(() => "datacenter"),
});

describe("copyNewProxies (the upload's COPY path)", () => {
  let h: GatewayHarness;
  let userId: number;
  beforeAll(async () => {
    h = await startGatewayHarness();
    userId = await userIdOfToken(h, (await h.register()).token);
  });
  afterAll(async () => {
    await h.close();
  });

  const storedIds = async (ips: string[]) =>
    (await h.db.pool.query<{ id: number }>("SELECT id FROM proxies WHERE user_id = $1 AND ip = ANY($2::text[]) ORDER BY ip", [userId, ips])).rows.map((r) => r.id);

  it("stores the batch and returns the new ids in batch order", async () => {
    const ips = ["5.5.4.1", "5.5.4.2", "5.5.4.3"];
    const client = await h.db.pool.connect();
    try {
      await client.query("BEGIN");
      const ids = await copyNewProxies(client, userId, batchOf(ips));
      await client.query("COMMIT");
      expect(ids).toEqual(await storedIds(ips));
    } finally {
      client.release();
    }
  });

  it("falls back to INSERT ... ON CONFLICT when a proxy appeared behind the upload lock's back, and the transaction goes on", async () => {
    const ips = ["5.5.5.1", "5.5.5.2", "5.5.5.3"];
    // A writer that did not take the upload lock got there first (committed on another connection).
    await h.db.pool.query("INSERT INTO proxies (user_id, ip, port) VALUES ($1, '5.5.5.2', 8080)", [userId]);
    const [existing] = await storedIds(["5.5.5.2"]);
    const client = await h.db.pool.connect();
    try {
      await client.query("BEGIN");
      const ids = await copyNewProxies(client, userId, batchOf(ips));
      expect(ids).toHaveLength(2);
      // Still in a usable transaction: the failed COPY was rolled back to its savepoint only.
      await client.query("SELECT 1");
      await client.query("COMMIT");
      const stored = await storedIds(ips);
      expect(stored).toHaveLength(3);
      expect(stored).toContain(existing);
      expect([...ids].sort((a, b) => a - b)).toEqual(stored.filter((id) => id !== existing).sort((a, b) => a - b));
    } finally {
      client.release();
    }
  });
});
