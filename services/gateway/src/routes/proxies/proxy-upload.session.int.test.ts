import type { GeoDatabase } from "@roost/geo";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { userIdOfToken } from "../../test-support/proxy-fixtures.js";
import { ProxyUploadSession } from "./proxy-upload.service.js";

/**
 * The upload session across batch boundaries (batches of 2 here; 10,000 in
 * production): duplicates of proxies whose batch is already stored or still
 * in flight, blacklist refusals that arrive after later duplicates were
 * read, proxies the user owns, and proxy_limits, all counted exactly.
 */
describe("ProxyUploadSession across batches", () => {
  let h: GatewayHarness;
  let geo: GeoDatabase;
  beforeAll(async () => {
    h = await startGatewayHarness();
    geo = await h.deps.geo.get();
  });
  afterAll(async () => {
    await h.close();
  });
  beforeEach(async () => {
    await h.db.pool.query("DELETE FROM blacklist_ranges");
  });

  async function run(userId: number, chunks: string[], maxProxies: number | null = null) {
    const session = await ProxyUploadSession.open({ pool: h.db.pool, geo, userId, allowPrivateTargets: false, maxProxies, batchSize: 2 });
    // One line per write: every batch boundary falls between lines.
    for (const chunk of chunks) await session.write(Buffer.from(`${chunk}\n`));
    return session.commit();
  }
  const stored = async (userId: number) =>
    (
      await h.db.pool.query<{ id: number; proxy: string }>(
        "SELECT id, ip || ':' || port || CASE WHEN username <> '' THEN ':' || username || ':' || password ELSE '' END AS proxy FROM proxies WHERE user_id = $1 ORDER BY id",
        [userId],
      )
    ).rows;
  const newUser = async () => userIdOfToken(h, (await h.register()).token);

  it("stores every distinct proxy once, in order of first appearance, whatever batch its repeats fall in", async () => {
    const userId = await newUser();
    const lines = ["8.8.1.1:80", "8.8.1.2:80", "8.8.1.1:80", "8.8.1.3:80:u:p", "8.8.1.2:80", "8.8.1.3:80:u:p", "8.8.1.3:80:U:p", "8.8.1.1:80", "8.8.1.4:81"];
    const outcome = await run(userId, lines);
    expect(outcome.details).toMatchObject({ submittedCount: 9, parsedCount: 9, blacklistedCount: 0 });
    expect(outcome.proxyCount).toBe(5);
    const rows = await stored(userId);
    expect(rows.map((r) => r.proxy)).toEqual(["8.8.1.1:80", "8.8.1.2:80", "8.8.1.3:80:u:p", "8.8.1.3:80:U:p", "8.8.1.4:81"]);
    expect(outcome.newProxyIds).toEqual(rows.map((r) => r.id));
  });

  it("counts every line of a blacklisted proxy, also repeats read before and after its batch was refused", async () => {
    const userId = await newUser();
    await h.db.pool.query("INSERT INTO blacklist_ranges (cidr, source) VALUES ('8.8.2.0/24', 'test')");
    const lines = ["8.8.2.1:80", "9.9.2.1:80", "8.8.2.1:80", "9.9.2.2:80", "8.8.2.1:80", "8.8.2.2:80", "9.9.2.1:80", "8.8.2.2:80", "8.8.2.1:80"];
    const outcome = await run(userId, lines);
    expect(outcome.details).toMatchObject({ parsedCount: 9, blacklistedCount: 6 });
    expect(outcome.proxyCount).toBe(2);
    expect((await stored(userId)).map((r) => r.proxy)).toEqual(["9.9.2.1:80", "9.9.2.2:80"]);
  });

  it("skips proxies the user already has and still counts them in proxyCount", async () => {
    const userId = await newUser();
    await run(userId, ["8.8.3.1:80", "8.8.3.2:80", "8.8.3.3:80"]);
    const before = await stored(userId);
    const outcome = await run(userId, ["8.8.3.4:80", "8.8.3.2:80", "8.8.3.5:80", "8.8.3.1:80", "8.8.3.4:80"]);
    expect(outcome.proxyCount).toBe(4);
    const after = await stored(userId);
    expect(after.slice(0, 3)).toEqual(before);
    expect(after.map((r) => r.proxy)).toEqual(["8.8.3.1:80", "8.8.3.2:80", "8.8.3.3:80", "8.8.3.4:80", "8.8.3.5:80"]);
    expect(outcome.newProxyIds).toEqual(after.slice(3).map((r) => r.id));
  });

  it("fills the room under proxy_limits in upload order and counts the rest", async () => {
    const userId = await newUser();
    await run(userId, ["8.8.4.1:80"]);
    const outcome = await run(userId, ["8.8.4.2:80", "8.8.4.1:80", "8.8.4.3:80", "8.8.4.4:80", "8.8.4.2:80", "8.8.4.5:80"], 3);
    expect(outcome.details.limitExceededCount).toBe(2);
    expect(outcome.proxyCount).toBe(3);
    expect((await stored(userId)).map((r) => r.proxy)).toEqual(["8.8.4.1:80", "8.8.4.2:80", "8.8.4.3:80"]);
  });
});
