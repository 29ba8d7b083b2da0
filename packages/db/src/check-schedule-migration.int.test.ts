import pg from "pg";
import type { TestDatabase } from "@roost/testkit";
import { migrate } from "./migrate.js";
import { databaseBefore } from "./migrations.test-support.js";

const MIGRATION = "20261127000000_check_schedule";

/** Users who lack a judge for a scheme get the global default of that scheme; their own judges stay first. */
describe(`migration ${MIGRATION}`, () => {
  let database: TestDatabase;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ database, close } = await databaseBefore(MIGRATION));
  });
  afterAll(async () => {
    await close();
  });

  it("adds the default https judge to users without one, and the http one to users without one, after their own", async () => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const user = async (email: string, judges: string[]): Promise<number> => {
        const id = (await client.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ($1, 'x') RETURNING id", [email])).rows[0]?.id ?? 0;
        for (const [position, url] of judges.entries()) await client.query("INSERT INTO user_judges (user_id, url, regex, position) VALUES ($1, $2, 'default', $3)", [id, url, position]);
        return id;
      };
      const httpOnly = await user("a@example.com", ["http://azenv.net/"]);
      const none = await user("b@example.com", []);
      const both = await user("c@example.com", ["http://judge.example.org/", "https://judge.example.org/"]);
      const httpsOnly = await user("d@example.com", ["https://judge.example.org/x"]);
      await migrate(database.url);
      const judges = async (id: number) =>
        (await client.query<{ url: string }>("SELECT url FROM user_judges WHERE user_id = $1 ORDER BY position, id", [id])).rows.map((r) => r.url);
      expect(await judges(httpOnly)).toEqual(["http://azenv.net/", "https://pool.proxyspace.pro/judge.php"]);
      expect(await judges(none)).toEqual(["http://azenv.net/", "https://pool.proxyspace.pro/judge.php"]);
      expect(await judges(both)).toEqual(["http://judge.example.org/", "https://judge.example.org/"]);
      expect(await judges(httpsOnly)).toEqual(["https://judge.example.org/x", "http://azenv.net/"]);
    } finally {
      await client.end();
    }
  });
});
