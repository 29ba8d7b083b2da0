import { randomBytes } from "node:crypto";
import { createDatabase, type Database } from "@roost/db";
import { createGeoResolver, type GeoDatabase } from "@roost/geo";
import { createTestDatabase, type TestDatabase } from "@roost/testkit";

/** A migrated database of its own for the package's integration tests, with users made in SQL. */
export interface InventoryHarness {
  database: TestDatabase;
  db: Database;
  /** The shipped offline country/ASN databases. */
  geo(): Promise<GeoDatabase>;
  /** A new user row; its id. */
  newUser(): Promise<number>;
  close(): Promise<void>;
}

export async function startInventoryHarness(): Promise<InventoryHarness> {
  const database = await createTestDatabase();
  const db = createDatabase({ databaseUrl: database.url });
  const resolver = createGeoResolver();
  return {
    database,
    db,
    geo: () => resolver.get(),
    async newUser() {
      const { rows } = await db.pool.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ($1, 'x') RETURNING id", [
        `inventory-${randomBytes(6).toString("hex")}@example.com`,
      ]);
      const id = rows[0]?.id;
      if (id === undefined) throw new Error("user not created");
      return id;
    },
    async close() {
      await db.close();
      await database.drop();
    },
  };
}
