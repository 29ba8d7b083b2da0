import pg from "pg";
import { createTestDatabase, type TestDatabase } from "@roost/testkit";

describe("proxies: alive agrees with alive_protocols", () => {
  let db: TestDatabase;
  let client: pg.Client;
  beforeAll(async () => {
    db = await createTestDatabase();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
    await db.drop();
  });

  const insert = (ip: string, alive: boolean, mask: number) =>
    client.query("INSERT INTO proxies (user_id, ip, port, alive, alive_protocols) VALUES (1, $1, 8080, $2, $3) RETURNING id", [ip, alive, mask]);

  it("stores never-checked, dead and alive proxies whose columns agree", async () => {
    await expect(insert("1.0.0.1", false, 0)).resolves.toMatchObject({ rowCount: 1 });
    await expect(insert("1.0.0.2", true, 1)).resolves.toMatchObject({ rowCount: 1 });
    await expect(insert("1.0.0.3", true, 15)).resolves.toMatchObject({ rowCount: 1 });
    // The defaults of an uploaded row agree too.
    await expect(client.query("INSERT INTO proxies (user_id, ip, port) VALUES (1, '1.0.0.4', 8080)")).resolves.toMatchObject({ rowCount: 1 });
  });

  it("refuses a row, insert or update, where they disagree or the mask has unknown bits", async () => {
    const violation = { code: "23514", constraint: "proxies_alive_matches_protocols" };
    await expect(insert("2.0.0.1", true, 0)).rejects.toMatchObject(violation);
    await expect(insert("2.0.0.2", false, 4)).rejects.toMatchObject(violation);
    await expect(insert("2.0.0.3", true, 16)).rejects.toMatchObject(violation);
    await expect(insert("2.0.0.4", true, -1)).rejects.toMatchObject(violation);
    const { rows } = await insert("2.0.0.5", true, 2);
    await expect(client.query("UPDATE proxies SET alive = false WHERE id = $1", [rows[0]?.id])).rejects.toMatchObject(violation);
    await expect(client.query("UPDATE proxies SET alive = false, alive_protocols = 0 WHERE id = $1", [rows[0]?.id])).resolves.toMatchObject({ rowCount: 1 });
  });
});
