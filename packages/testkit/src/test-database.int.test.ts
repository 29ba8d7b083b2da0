import { randomBytes } from "node:crypto";
import pg from "pg";
import { ensureTemplate, TEMPLATE_IDLE_DROP_SEC, testServerUrl } from "./test-database.js";

/** Templates of other migration sets: used within the week kept, idle or unmarked ones dropped, the current one kept. */
describe("ensureTemplate's clean-up of other templates", () => {
  const admin = new pg.Client({ connectionString: testServerUrl });
  const names = {
    recent: `roost_tpl_test${randomBytes(4).toString("hex")}`,
    idle: `roost_tpl_test${randomBytes(4).toString("hex")}`,
    unmarked: `roost_tpl_test${randomBytes(4).toString("hex")}`,
  };
  const present = async (name: string) => (await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name])).rowCount === 1;

  beforeAll(async () => {
    await admin.connect();
    const now = Math.floor(Date.now() / 1000);
    for (const name of Object.values(names)) await admin.query(`CREATE DATABASE "${name}"`);
    await admin.query(`COMMENT ON DATABASE "${names.recent}" IS 'roost test template, last used ${now - 3600}'`);
    await admin.query(`COMMENT ON DATABASE "${names.idle}" IS 'roost test template, last used ${now - TEMPLATE_IDLE_DROP_SEC - 60}'`);
  });
  afterAll(async () => {
    for (const name of Object.values(names)) await admin.query(`DROP DATABASE IF EXISTS "${name}"`);
    await admin.end();
  });

  it("drops templates idle for a week or never marked, keeps recent ones and its own", async () => {
    const current = await ensureTemplate();
    expect([await present(names.recent), await present(names.idle), await present(names.unmarked)]).toEqual([true, false, false]);
    expect(await present(current)).toBe(true);
    const { rows } = await admin.query<{ comment: string | null }>("SELECT shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname = $1", [current]);
    expect(rows[0]?.comment).toMatch(/^roost test template, last used \d+$/);
  });
});
