import net, { type AddressInfo } from "node:net";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { userIdOfToken } from "../../test-support/proxy-fixtures.js";

/**
 * Exports whose clients read nothing must not take the database pool from
 * everyone else (docs/proxies.md "Export"): two at a time per user, the
 * rest 429; and one that stalls for API_EXPORT_STALL_SECONDS is cut off,
 * freeing its connection.
 */
describe("POST /api/user/export: clients that do not read", () => {
  let h: GatewayHarness;
  let port: number;
  const sockets: net.Socket[] = [];

  beforeAll(async () => {
    h = await startGatewayHarness({ API_EXPORT_STALL_SECONDS: "2" });
    ({ port } = (await h.service.start()) as AddressInfo);
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await h.service.stop();
    await h.close();
  });

  const copies = async (): Promise<number> =>
    (await h.db.pool.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'COPY (SELECT%'")).rowCount ?? 0;

  /** Sends an export request on a raw socket and never reads the answer (the socket is paused). */
  const stalledExport = async (token: string, body: string): Promise<net.Socket> => {
    const socket = net.connect({ port, host: "127.0.0.1" });
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    socket.pause();
    socket.on("error", () => undefined);
    socket.write(
      [
        "POST /api/user/export HTTP/1.1",
        `Host: 127.0.0.1:${port}`,
        `Authorization: Bearer ${token}`,
        "Content-Type: application/json",
        `Content-Length: ${Buffer.byteLength(body)}`,
        "",
        body,
      ].join("\r\n"),
    );
    return socket;
  };

  it("answers a user's third export at once with 429 while two stall, serves everyone else, and cuts the stalled ones off", async () => {
    const { token } = await h.register();
    const { token: other } = await h.register();
    const userId = await userIdOfToken(h, token);
    // ~30 MB of template output: far more than loopback socket buffers hold, so an export that is not read stalls.
    await h.db.pool.query(
      `INSERT INTO proxies (user_id, ip, port)
       SELECT $1, ('20.' || (i >> 16) || '.' || ((i >> 8) & 255) || '.' || (i & 255))::inet, 8080 FROM generate_series(1, 30000) AS i`,
      [userId],
    );
    const body = JSON.stringify({ outputFormat: `ip:port ${"x".repeat(990)}` });
    const stalled = [await stalledExport(token, body), await stalledExport(token, body)];
    await waitFor(async () => (await copies()) === 2, { what: "two exports streaming" });

    const third = await h.http.post("/api/user/export").set("Authorization", `Bearer ${token}`).send({});
    expect([third.status, third.headers["retry-after"], third.body]).toEqual([429, "5", { error: expect.stringContaining("at most 2 at a time per user") }]);
    // Everyone else goes on: another user's export and the API's other reads.
    const theirs = await h.http.post("/api/user/export").set("Authorization", `Bearer ${other}`).send({});
    expect([theirs.status, theirs.text]).toEqual([200, ""]);
    const count = await h.http.get("/api/getProxyCount").set("Authorization", `Bearer ${token}`);
    expect([count.status, count.body]).toEqual([200, 30000]);

    // After API_EXPORT_STALL_SECONDS without reading (the sockets stay paused), the server cuts both off and their COPYs end.
    await waitFor(async () => (await copies()) === 0, { timeoutMs: 20_000, what: "the stalled exports' COPYs to end" });
    for (const socket of stalled) socket.destroy();
    const again = await h.http.post("/api/user/export").set("Authorization", `Bearer ${token}`).send({});
    expect(again.status).toBe(200);
    expect(again.text.split("\n").filter(Boolean)).toHaveLength(30000);
  }, 60_000);
});
