import { parseIpv4 } from "@roost/net";
import { startInventoryHarness, type InventoryHarness } from "../inventory.test-support.js";
import { ProxyCopyText } from "./proxy-copy-text.js";
import { ProxyCopier, type ProxyInsertBatch } from "./ingest.repository.js";

const columnsOf = (ips: string[]): ProxyInsertBatch => ({
  ip: ips,
  port: ips.map(() => 8080),
  username: ips.map(() => ""),
  password: ips.map(() => ""),
  schemeHint: ips.map(() => null),
  country: ips.map(() => "US"),
  asn: ips.map(() => null),
  estimatedType: ips.map(() => "datacenter"),
});

describe("ProxyCopier (the upload's COPY path)", () => {
  let h: InventoryHarness;
  let userId: number;
  beforeAll(async () => {
    h = await startInventoryHarness();
    userId = await h.newUser();
  });
  afterAll(async () => {
    await h.close();
  });

  const rowsOf = (ips: string[]): ProxyCopyText => {
    const text = new ProxyCopyText(userId);
    for (const ip of ips) {
      text.add({ ip: parseIpv4(ip), port: 8080, username: "", password: "", schemeHint: null, country: "US", asn: null, estimatedType: "datacenter" });
    }
    return text;
  };
  const copy = (copier: ProxyCopier, ips: string[]) => copier.copy(rowsOf(ips), () => columnsOf(ips));
  const storedIds = async (ips: string[]) =>
    (await h.db.pool.query<{ id: number }>("SELECT id FROM proxies WHERE user_id = $1 AND ip = ANY($2::text[]) ORDER BY ip", [userId, ips])).rows.map((r) => r.id);

  async function inTransaction<T>(work: (copier: ProxyCopier) => Promise<T>): Promise<T> {
    const client = await h.db.pool.connect();
    try {
      await client.query("BEGIN");
      const result = await work(new ProxyCopier(client, userId));
      await client.query("COMMIT");
      return result;
    } finally {
      client.release();
    }
  }

  it("stores the batch and returns the new ids in batch order", async () => {
    const ips = ["5.5.4.1", "5.5.4.2", "5.5.4.3"];
    const ids = await inTransaction((copier) => copy(copier, ips));
    expect(ids).toEqual(await storedIds(ips));
    const { rows } = await h.db.pool.query("SELECT country, estimated_type, scheme_hint, asn FROM proxies WHERE id = $1", [ids[0]]);
    expect(rows[0]).toEqual({ country: "US", estimated_type: "datacenter", scheme_hint: null, asn: null });
  });

  it("falls back to INSERT ... ON CONFLICT when a proxy appeared behind the upload lock's back, and the next batches go on", async () => {
    const first = ["5.5.5.1", "5.5.5.2"];
    const second = ["5.5.6.1", "5.5.6.2", "5.5.6.3"];
    const third = ["5.5.7.1"];
    // A writer that did not take the upload lock got there first (committed on another connection).
    await h.db.pool.query("INSERT INTO proxies (user_id, ip, port) VALUES ($1, '5.5.6.2', 8080)", [userId]);
    const [existing] = await storedIds(["5.5.6.2"]);
    const [a, b, c] = await inTransaction(async (copier) => [await copy(copier, first), await copy(copier, second), await copy(copier, third)]);
    expect(a).toEqual(await storedIds(first));
    expect(c).toEqual(await storedIds(third));
    // Only the two missing rows of the second batch were stored; the first batch survived the rollback to the savepoint.
    const stored = await storedIds(second);
    expect(stored).toHaveLength(3);
    expect(stored).toContain(existing);
    expect([...(b ?? [])].sort((x, y) => x - y)).toEqual(stored.filter((id) => id !== existing).sort((x, y) => x - y));
  });

  it("reads ids that are not one run of numbers (another session took some in between)", async () => {
    const ips = ["5.5.8.1", "5.5.8.2", "5.5.8.3", "5.5.8.4"];
    // A sequence step of 3 makes every batch's ids non-contiguous, as interleaved nextval calls would.
    await h.db.pool.query("ALTER SEQUENCE proxies_id_seq INCREMENT BY 3");
    try {
      const ids = await inTransaction((copier) => copy(copier, ips));
      expect(ids).toEqual(await storedIds(ips));
      expect(ids[1]! - ids[0]!).toBe(3);
    } finally {
      await h.db.pool.query("ALTER SEQUENCE proxies_id_seq INCREMENT BY 1");
    }
  });

  it("uses ids reserved ahead, the first ones when rows were dropped since", async () => {
    const ips = ["5.5.10.1", "5.5.10.2"];
    const ids = await inTransaction(async (copier) => {
      const reserved = copier.reserveIds(5);
      const taken = await reserved;
      const stored = await copier.copy(rowsOf(ips), () => columnsOf(ips), reserved);
      expect(stored).toEqual(taken.slice(0, 2));
      return stored;
    });
    expect(ids).toEqual(await storedIds(ips));
  });

  it("takes ids again when a reservation ran while a failed COPY had aborted the transaction", async () => {
    const conflicting = ["5.5.11.1", "5.5.11.2"];
    const next = ["5.5.11.3", "5.5.11.4"];
    await h.db.pool.query("INSERT INTO proxies (user_id, ip, port) VALUES ($1, '5.5.11.2', 8080)", [userId]);
    const ids = await inTransaction(async (copier) => {
      const ready = copier.reserveIds(2);
      await ready;
      const failing = copier.copy(rowsOf(conflicting), () => columnsOf(conflicting), ready);
      // The COPY is on the wire now; this reservation queues behind it and meets the aborted transaction.
      await new Promise<void>((resolve) => setImmediate(resolve));
      const late = copier.reserveIds(2);
      await expect(late).rejects.toMatchObject({ code: "25P02" });
      expect(await failing).toHaveLength(1);
      return copier.copy(rowsOf(next), () => columnsOf(next), late);
    });
    expect(ids).toEqual(await storedIds(next));
    expect(await storedIds(conflicting)).toHaveLength(2);
  });

  it("keeps one savepoint open between batches, not one per batch", async () => {
    const client = await h.db.pool.connect();
    try {
      await client.query("BEGIN");
      const copier = new ProxyCopier(client, userId);
      for (const ip of ["5.5.9.1", "5.5.9.2", "5.5.9.3"]) await copy(copier, [ip]);
      // Nested savepoints of the same name would survive one RELEASE.
      await client.query("RELEASE SAVEPOINT roost_upload_copy");
      await expect(client.query("RELEASE SAVEPOINT roost_upload_copy")).rejects.toMatchObject({ code: "3B001" });
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    expect(await storedIds(["5.5.9.1", "5.5.9.2", "5.5.9.3"])).toEqual([]);
  });
});
