import net, { type AddressInfo } from "node:net";
import pg from "pg";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { userIdOfToken } from "../../test-support/proxy-fixtures.js";
import { connectionsInTransaction, rawRequest, stalledUpload, type StalledUpload } from "../../test-support/stalled-clients.js";

/**
 * Exports whose clients read nothing and uploads whose clients send nothing
 * must not take the database pool from everyone else (docs/proxies.md
 * "Connections held by uploads and exports"): two exports at a time per
 * user, the rest 429; one upload per user holds a connection while up to
 * four wait in line; the pool's size less two in all; and one that stalls
 * for API_STREAM_STALL_SECONDS is cut off, freeing its connection.
 */
describe("POST /api/user/export: clients that do not read", () => {
  let h: GatewayHarness;
  let port: number;
  const sockets: net.Socket[] = [];

  beforeAll(async () => {
    // Long enough that the two stalled exports are not cut off before the checks below on a slow host.
    h = await startGatewayHarness({ API_STREAM_STALL_SECONDS: "5" });
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
    const head = ["POST /api/user/export HTTP/1.1", `Authorization: Bearer ${token}`, "Content-Type: application/json", `Content-Length: ${Buffer.byteLength(body)}`];
    const socket = await rawRequest(port, head, body, sockets);
    socket.pause();
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

    // After API_STREAM_STALL_SECONDS without reading (the sockets stay paused), the server cuts both off and their COPYs end.
    await waitFor(async () => (await copies()) === 0, { timeoutMs: 20_000, what: "the stalled exports' COPYs to end" });
    for (const socket of stalled) socket.destroy();
    const again = await h.http.post("/api/user/export").set("Authorization", `Bearer ${token}`).send({});
    expect(again.status).toBe(200);
    expect(again.text.split("\n").filter(Boolean)).toHaveLength(30000);
  }, 60_000);
});

/**
 * The uploads' half. A slot is counted as held when it is taken, before the
 * upload's first byte opens its transaction: the tests wait for both.
 * Each suite's API_STREAM_STALL_SECONDS is short enough for the cut-offs to
 * come quickly and long enough that none comes between a test's wait and
 * its checks on a slow host.
 */
function describeStalledUploads(title: string, env: Record<string, string>, body: (s: StalledUploadsSuite) => void): void {
  describe(title, () => {
    const suite = {} as StalledUploadsSuite;
    const sockets: net.Socket[] = [];
    let observer: pg.Client;

    beforeAll(async () => {
      const h = await startGatewayHarness({ RATE_LIMIT_REGISTER_PER_MINUTE: "1000", ...env });
      const { port } = (await h.service.start()) as AddressInfo;
      // Its own connection: the gateway's pool is what is under test.
      observer = new pg.Client({ connectionString: h.database.url });
      await observer.connect();
      Object.assign(suite, {
        h,
        inTransaction: () => connectionsInTransaction(observer),
        // The harness shares the pool with the gateway.
        checkedOut: () => h.db.pool.totalCount - h.db.pool.idleCount,
        silentUpload: (token: string, ip: string) => stalledUpload(port, token, `${ip}:8080`, sockets),
        upload: (token: string, lines: string) =>
          h.http.post("/api/addProxies").set("Authorization", `Bearer ${token}`).attach("file", Buffer.from(lines), "p.txt"),
        slotMetrics: async () => {
          const res = await h.http.get("/metrics");
          const values: Record<string, number> = {};
          for (const match of (res.text as string).matchAll(/^svc_connection_slots\{kind="(\w+)",state="(\w+)"\} (\d+)$/gm)) {
            values[`${match[1]}/${match[2]}`] = Number(match[3]);
          }
          return values;
        },
      } satisfies StalledUploadsSuite);
    });
    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await observer.end();
      await suite.h.service.stop();
      await suite.h.close();
    });

    body(suite);
  });
}

interface StalledUploadsSuite {
  h: GatewayHarness;
  /** Connections of the gateway inside a transaction (an upload's, idle or waiting on a lock). */
  inTransaction(): Promise<number>;
  /** Connections of the gateway's pool given out now. */
  checkedOut(): number;
  /** An upload that sends one line of a file part, then nothing. */
  silentUpload(token: string, ip: string): Promise<StalledUpload>;
  upload(token: string, lines: string): ReturnType<GatewayHarness["http"]["post"]>;
  /** `svc_connection_slots` as `kind/state` → value. */
  slotMetrics(): Promise<Record<string, number>>;
}

describeStalledUploads("POST /api/addProxies: one user's uploads that stop sending", { API_STREAM_STALL_SECONDS: "3" }, (s) => {
  it("holds one connection for a user's uploads, lines up four more, refuses the next, and cuts each stalled one off in turn", async () => {
    const { h, inTransaction, checkedOut, silentUpload, upload, slotMetrics } = s;
    const { token } = await h.register();
    const { token: other } = await h.register();
    const stalled: StalledUpload[] = [];
    for (let i = 0; i < 5; i++) stalled.push(await silentUpload(token, `9.9.9.${i + 1}`));
    await waitFor(async () => {
      const metrics = await slotMetrics();
      return metrics["upload/held"] === 1 && metrics["upload/waiting"] === 4 && (await inTransaction()) === 1;
    }, { what: "one upload in its transaction and four in line" });
    expect([checkedOut(), h.db.pool.waitingCount]).toEqual([1, 0]);

    const sixth = await upload(token, "9.9.9.9:8080\n");
    expect([sixth.status, sixth.headers["retry-after"], sixth.body]).toEqual([
      429,
      "5",
      { error: "Too many uploads in progress: at most 5 at a time per user; try again when one finishes" },
    ]);
    // Everyone else goes on, the stalled user's reads too.
    const theirs = await upload(other, "8.8.8.8:8080\n");
    expect([theirs.status, (theirs.body as { proxyCount: number }).proxyCount]).toEqual([200, 1]);
    const count = await h.http.get("/api/getProxyCount").set("Authorization", `Bearer ${token}`);
    expect([count.status, count.body]).toEqual([200, 0]);

    // Each is cut off API_STREAM_STALL_SECONDS after it got its connection, then the next in line
    // gets it; never more than one at a time, and none stores anything.
    const peak = { transactions: 0 };
    await waitFor(
      async () => {
        peak.transactions = Math.max(peak.transactions, await inTransaction());
        return stalled.every(({ closed }) => closed());
      },
      { timeoutMs: 30_000, what: "the server to cut off the five stalled uploads" },
    );
    expect(peak.transactions).toBeLessThanOrEqual(1);
    await waitFor(async () => (await inTransaction()) === 0, { what: "the last upload's rollback" });
    expect(await slotMetrics()).toMatchObject({ "upload/held": 0, "upload/waiting": 0, "extra/held": 0 });
    expect((await h.http.get("/api/getProxyCount").set("Authorization", `Bearer ${token}`)).body).toBe(0);
    const again = await upload(token, "9.9.9.1:8080\n");
    expect([again.status, (again.body as { proxyCount: number }).proxyCount]).toEqual([200, 1]);
  }, 60_000);
});

describeStalledUploads("POST /api/addProxies: many users' uploads that stop sending", { API_STREAM_STALL_SECONDS: "5" }, (s) => {
  it("leaves two of the pool's ten connections to everyone else while many users' uploads stall", async () => {
    const { h, inTransaction, checkedOut, silentUpload, slotMetrics } = s;
    const tokens: string[] = [];
    for (let i = 0; i < 12; i++) tokens.push((await h.register()).token);
    const { token: reader } = await h.register();
    const stalled: StalledUpload[] = [];
    for (const [i, token] of tokens.entries()) stalled.push(await silentUpload(token, `7.7.7.${i + 1}`));
    await waitFor(async () => {
      const metrics = await slotMetrics();
      return metrics["upload/held"] === 8 && metrics["upload/waiting"] === 4 && (await inTransaction()) === 8;
    }, { what: "eight uploads in their transactions and four in line" });
    expect([checkedOut(), h.db.pool.waitingCount]).toEqual([8, 0]);

    // Reads find a free connection; an export is refused, not queued.
    const page = await h.http.get("/api/getProxyPage/1").set("Authorization", `Bearer ${reader}`);
    expect(page.status).toBe(200);
    const exported = await h.http.post("/api/user/export").set("Authorization", `Bearer ${reader}`).send({});
    expect([exported.status, exported.body]).toEqual([429, { error: "Too many exports in progress; try again shortly" }]);

    await waitFor(async () => stalled.every(({ closed }) => closed()), { timeoutMs: 30_000, what: "the server to cut off the stalled uploads" });
    await waitFor(async () => (await inTransaction()) === 0, { what: "their rollbacks" });
    expect(await slotMetrics()).toMatchObject({ "upload/held": 0, "upload/waiting": 0 });
  }, 60_000);
});

describeStalledUploads("POST /api/addProxies: the line's longest wait", { API_STREAM_STALL_SECONDS: "30", API_UPLOAD_QUEUE_SECONDS: "1" }, (s) => {
  it("answers 429 to an upload that waited API_UPLOAD_QUEUE_SECONDS in line, well inside the server's request timeout", async () => {
    const { h, silentUpload, upload, slotMetrics } = s;
    const { token } = await h.register();
    const holder = await silentUpload(token, "6.6.6.1");
    await waitFor(async () => (await slotMetrics())["upload/held"] === 1, { what: "the stalled upload to hold its slot" });

    const queued = await upload(token, "6.6.6.2:8080\n");
    expect([queued.status, queued.headers["retry-after"], queued.body]).toEqual([
      429,
      "5",
      { error: "Too many uploads in progress: this one waited its longest for a turn; try again shortly" },
    ]);
    // Out of the line, and the holder (silent for less than its 30 s) keeps its slot.
    expect(await slotMetrics()).toMatchObject({ "upload/held": 1, "upload/waiting": 0 });

    holder.socket.destroy();
    await waitFor(async () => (await slotMetrics())["upload/held"] === 0, { what: "the stalled upload's slot to come back" });
    const again = await upload(token, "6.6.6.2:8080\n");
    expect([again.status, (again.body as { proxyCount: number }).proxyCount]).toEqual([200, 1]);
  }, 30_000);
});
