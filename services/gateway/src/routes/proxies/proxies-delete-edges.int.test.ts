import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { insertProxy, userIdOfToken } from "../../test-support/proxy-fixtures.js";

/**
 * DELETE /api/proxies Mode A with ids outside what a proxy id can be
 * (docs/proxies.md "Delete"; ids are positive int4): the whole request is a
 * 400 `{error}` and nothing is deleted, not even the valid ids beside them.
 */
describe("DELETE /api/proxies: malformed ids", () => {
  let h: GatewayHarness;
  let token: string;
  let userId: number;
  let otherId: number;
  let mine: number[];

  const remaining = async (user: number): Promise<number[]> => {
    const { rows } = await h.db.pool.query<{ id: number }>("SELECT id FROM proxies WHERE user_id = $1 ORDER BY id", [user]);
    return rows.map((r) => r.id);
  };
  /** Sends the body as written (JSON.stringify would turn some numbers into other text). */
  const del = (json: string) => h.http.delete("/api/proxies").set("Authorization", `Bearer ${token}`).set("Content-Type", "application/json").send(json);

  beforeAll(async () => {
    h = await startGatewayHarness();
    ({ token } = await h.register());
    const { token: other } = await h.register();
    userId = await userIdOfToken(h, token);
    otherId = await userIdOfToken(h, other);
    mine = [await insertProxy(h.db.pool, userId, { ip: "8.8.8.1" }), await insertProxy(h.db.pool, userId, { ip: "8.8.8.2" })];
    await insertProxy(h.db.pool, otherId, { ip: "7.7.7.1" });
  });
  afterAll(async () => {
    await h.close();
  });

  it("Mode A: ids above 2^31 - 1, fractional or negative → 400 {error}, nothing deleted", async () => {
    const [a = 0, b = 0] = mine;
    const theirs = await remaining(otherId);
    for (const json of [
      "[2147483648]",
      "[4294967296]",
      "[9007199254740993]",
      "[1e300]",
      `[${a}, 2147483648]`,
      "[1.5]",
      `[${a + 0.5}]`,
      `[${a}, ${b}.25]`,
      `[-${a}]`,
      "[-2147483648]",
      `[${a}, -1]`,
    ]) {
      const res = await del(json);
      expect([json, res.status]).toEqual([json, 400]);
      expect([json, res.body]).toEqual([json, { error: expect.any(String) }]);
      expect(await remaining(userId)).toEqual(mine);
    }
    expect(await remaining(otherId)).toEqual(theirs);
  });

  it("Mode A: 2^31 - 1 is a well-formed id (unknown here, so nothing matches)", async () => {
    const res = await del("[2147483647]");
    expect(res.status).toBe(200);
    expect(res.body).toBe("No proxies matched the delete criteria.");
    expect(await remaining(userId)).toEqual(mine);
  });

  it("Mode B: an unknown field is a 400 naming it, so a misspelled filter never widens a delete to everything", async () => {
    const [a = 0] = mine;
    for (const body of [
      { scope: "all", status: "dead" },
      { scope: "all", reputation: ["poor"] },
      { proxies: [a], scope: "selected", proxystatus: "dead" },
      { scope: "all", proxyStatus: "dead", outputFormat: "json" },
    ]) {
      const res = await del(JSON.stringify(body));
      expect([body, res.status, res.body]).toEqual([body, 400, { error: expect.stringContaining(Object.keys(body).find((k) => !["scope", "proxies", "proxyStatus"].includes(k)) ?? "?") }]);
      expect(await remaining(userId)).toEqual(mine);
    }
    // The contract's fields, nulls included, still pass.
    const known = await del(JSON.stringify({ proxies: [a], filter: null, http: null, https: null, socks4: null, socks5: null, maxRetries: null, maxTimeout: null, proxyStatus: "all", reputationLabels: [], scope: "selected" }));
    expect([known.status, known.body]).toEqual([200, "Deleted 1 proxies."]);
    mine = mine.slice(1);
    expect(await remaining(userId)).toEqual(mine);
  });
});
