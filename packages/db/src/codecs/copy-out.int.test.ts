import { createEmptyDatabase, waitFor, type TestDatabase } from "@roost/testkit";
import pg from "pg";
import { RecordingWriter } from "@roost/testkit";
import { CopyOutQuery } from "./copy-out.js";

/** CopyOutQuery against a real server: the driver's connection handed over and back. */
describe("CopyOutQuery", () => {
  let db: TestDatabase;
  let client: pg.Client;
  /** A second connection, to watch the first one's backend. */
  let observer: pg.Client;
  beforeAll(async () => {
    db = await createEmptyDatabase();
    observer = new pg.Client({ connectionString: db.url });
    await observer.connect();
  });
  beforeEach(async () => {
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  });
  afterEach(async () => {
    await client.end().catch(() => undefined);
  });
  afterAll(async () => {
    await observer.end();
    await db.drop();
  });

  /** Reads the COPY to its end; the bytes read and the rows the writer saw. */
  async function readAll(sql: string): Promise<{ writer: RecordingWriter; bytes: number; reads: number }> {
    const writer = new RecordingWriter();
    const copy = client.query(new CopyOutQuery(sql, writer));
    let bytes = 0;
    let reads = 0;
    for (let out = await copy.read(); out !== null; out = await copy.read()) {
      expect(out.length).toBeGreaterThan(0);
      bytes += out.length;
      reads++;
    }
    return { writer, bytes, reads };
  }

  const stillWorks = async (): Promise<void> => {
    expect((await client.query<{ n: number }>("SELECT 41 + 1 AS n")).rows).toEqual([{ n: 42 }]);
  };

  it("reads every row in order over many socket reads, then gives the connection back to the driver", async () => {
    const { writer, bytes, reads } = await readAll(`COPY (SELECT x, repeat('r', x % 300), E'a\\tb' FROM generate_series(1, 30000) x) TO STDOUT`);
    expect(writer.rows).toBe(30_000);
    expect(reads).toBeGreaterThan(10);
    expect(writer.seen).toEqual(Array.from({ length: 30_000 }, (_, i) => `${i + 1}\t${"r".repeat((i + 1) % 300)}\ta\\tb`));
    expect(bytes).toBe(writer.seen.reduce((n, row) => n + Buffer.byteLength(row), 0));
    await stillWorks();
  });

  it("reads an empty COPY", async () => {
    const { writer } = await readAll("COPY (SELECT 1 WHERE false) TO STDOUT");
    expect(writer.rows).toBe(0);
    await stillWorks();
  });

  it("skips notices sent between rows", async () => {
    await client.query(`CREATE FUNCTION pg_temp.noisy(i int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'row %', i; RETURN i; END $$`);
    const { writer } = await readAll("COPY (SELECT pg_temp.noisy(x) FROM generate_series(1, 500) x) TO STDOUT");
    expect(writer.seen).toEqual(Array.from({ length: 500 }, (_, i) => String(i + 1)));
    await stillWorks();
  });

  it("throws the server's error, whether it comes before the rows or among them, and the connection stays usable", async () => {
    await expect(readAll("COPY (SELECT no_such_column) TO STDOUT")).rejects.toMatchObject({ code: "42703" });
    await stillWorks();
    const writer = new RecordingWriter();
    const copy = client.query(new CopyOutQuery("COPY (SELECT 1 / (20000 - x) FROM generate_series(1, 30000) x) TO STDOUT", writer));
    const drain = async (): Promise<void> => {
      while ((await copy.read()) !== null);
    };
    await expect(drain()).rejects.toMatchObject({ code: "22012" });
    expect(writer.rows).toBeGreaterThan(0);
    expect(writer.rows).toBeLessThan(20_000);
    await stillWorks();
  });

  it("fails a statement that is not a COPY TO, and the connection stays usable", async () => {
    const statements = [
      "SELECT 1",
      "",
      "CREATE TEMP TABLE t (x int); COPY t FROM STDIN",
      "SELECT 1; COPY (SELECT 1) TO STDOUT",
      "SET search_path TO public; COPY (SELECT 1) TO STDOUT",
    ];
    for (const sql of statements) {
      const outcome = await readAll(sql).then(
        () => "read",
        (error: Error) => error.name,
      );
      expect([sql, outcome]).toEqual([sql, "CopyOutError"]);
      await stillWorks();
    }
  });

  it("abandon() ends the backend's COPY while it waits for the reader", async () => {
    const copying = async (): Promise<number> =>
      Number(
        (
          await observer.query<{ n: string }>(
            `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'COPY (SELECT x, repeat%'`,
          )
        ).rows[0]?.n ?? 0,
      );
    const copy = client.query(new CopyOutQuery("COPY (SELECT x, repeat('r', 1000) FROM generate_series(1, 200000) x) TO STDOUT", new RecordingWriter()));
    expect(await copy.read()).not.toBeNull();
    expect(await copying()).toBe(1);
    copy.abandon();
    await expect(copy.read()).rejects.toThrow("abandoned");
    await client.end();
    await waitFor(async () => (await copying()) === 0, { timeoutMs: 10_000, what: "the backend's COPY to end" });
  });
});
