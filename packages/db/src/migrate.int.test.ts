import pg from "pg";
import { createEmptyDatabase, type TestDatabase } from "@roost/testkit";
import { createDatabase, migrate, readMigrations } from "@roost/db";

describe("migrate", () => {
  let db: TestDatabase;
  beforeEach(async () => {
    db = await createEmptyDatabase();
  });
  afterEach(async () => {
    await db.drop();
  });

  it("applies every migration once and records it like Prisma", async () => {
    const migrations = await readMigrations();
    const first = await migrate(db.url);
    expect(first.applied).toEqual(migrations.map((m) => m.name));
    const second = await migrate(db.url);
    expect(second.applied).toEqual([]);
    expect(second.alreadyApplied).toEqual(migrations.map((m) => m.name));

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT migration_name, checksum, finished_at, applied_steps_count, rolled_back_at FROM _prisma_migrations ORDER BY migration_name`,
      );
      expect(rows).toHaveLength(migrations.length);
      rows.forEach((row, i) => {
        expect(row.migration_name).toBe(migrations[i]!.name);
        expect(row.checksum).toBe(migrations[i]!.checksum);
        expect(row.checksum).toMatch(/^[0-9a-f]{64}$/);
        expect(row.finished_at).toBeInstanceOf(Date);
        expect(row.applied_steps_count).toBe(1);
        expect(row.rolled_back_at).toBeNull();
      });
    } finally {
      await client.end();
    }
  });

  it("runs safely from many processes at once (advisory lock)", async () => {
    const results = await Promise.all(Array.from({ length: 5 }, () => migrate(db.url)));
    const appliedTotal = results.reduce((n, r) => n + r.applied.length, 0);
    expect(appliedTotal).toBe((await readMigrations()).length);
  });

  it("refuses a migration whose file changed after it was applied", async () => {
    await migrate(db.url);
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await client.query(`UPDATE _prisma_migrations SET checksum = repeat('0', 64)`);
    await client.end();
    await expect(migrate(db.url)).rejects.toThrow(/checksum mismatch/);
  });

  it("gives a Prisma client that loads and queries under the test runner", async () => {
    await migrate(db.url);
    const database = createDatabase({ databaseUrl: db.url });
    try {
      const user = await database.prisma.user.create({ data: { email: "a@example.com", passwordHash: "x" } });
      expect(user.role).toBe("user");
      expect(await database.prisma.user.count()).toBe(1);
    } finally {
      await database.close();
    }
  });
});
