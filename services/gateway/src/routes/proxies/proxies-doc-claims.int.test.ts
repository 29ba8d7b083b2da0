import { CHECK_WAKE_JOB_ID } from "@roost/queue";
import net, { type AddressInfo } from "node:net";
import request from "supertest";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { insertProxy, userIdOfToken, type ProxyFixture } from "../../test-support/proxy-fixtures.js";

/**
 * Behaviours docs/proxies.md promises that no other test pinned down:
 * export headers and body leniency, list filter values in any case,
 * check hand-off, and an upload whose client goes away mid-body.
 */

interface ListBody {
  proxies: { id: number; ip: string }[];
  total: number;
}

interface UploadBody {
  proxyCount: number;
  details: Record<string, number>;
}

describe("docs/proxies.md claims", () => {
  let h: GatewayHarness;

  beforeAll(async () => {
    h = await startGatewayHarness();
    await h.register(); // the admin; the tests below use plain users
  });
  afterAll(async () => {
    await h.close();
  });

  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
  const newUser = async (): Promise<{ token: string; userId: number }> => {
    const { token } = await h.register();
    return { token, userId: await userIdOfToken(h, token) };
  };
  const storedCount = async (userId: number): Promise<number> =>
    Number((await h.db.pool.query<{ n: string }>("SELECT count(*) AS n FROM proxies WHERE user_id = $1", [userId])).rows[0]?.n);

  describe("POST /api/user/export", () => {
    let token: string;
    const fixtures: ProxyFixture[] = [
      { ip: "8.8.8.1", port: 80, aliveOn: ["http"], reputationLabel: "good", reputationScore: 90 },
      { ip: "8.8.8.2", port: 1080, aliveOn: ["socks5"], reputationLabel: "poor", reputationScore: 10 },
      { ip: "9.9.9.3", port: 3128 }, // never checked: dead, unknown
      { ip: "9.9.9.4", port: 8000, latestCheck: new Date("2026-01-02T03:04:05.000Z") }, // checked, dead
    ];
    const everyProxy = "8.8.8.1:80\n8.8.8.2:1080\n9.9.9.3:3128\n9.9.9.4:8000\n";

    beforeAll(async () => {
      let userId: number;
      ({ token, userId } = await newUser());
      for (const fixture of fixtures) await insertProxy(h.db.pool, userId, fixture);
      // Another user's rows never show up in this user's export.
      const other = await newUser();
      await insertProxy(h.db.pool, other.userId, { ip: "7.7.7.7", aliveOn: ["http"] });
    });

    const exportRaw = (body: string) =>
      h.http.post("/api/user/export").set(bearer(token)).set("Content-Type", "application/json").send(body);

    it("answers with Cache-Control: no-store, for every output format and for an export that matches nothing", async () => {
      const cases: [object, string | RegExp][] = [
        [{}, everyProxy],
        [{ outputFormat: "ip:port:username:password" }, everyProxy],
        [{ outputFormat: "csv", proxyStatus: "alive" }, /^id,ip,port,.*\n\d+,8\.8\.8\.1,80,.*\n\d+,8\.8\.8\.2,1080,.*\n$/],
        [{ outputFormat: "json", proxyStatus: "dead" }, /^\[\n\{"id":\d+,"ip":"9\.9\.9\.3".*\},\n\{"id":\d+,"ip":"9\.9\.9\.4".*\}\n\]\n$/],
        // Nothing matches: still a 200 with the headers.
        [{ proxyStatus: "alive", reputationLabels: ["neutral"] }, ""],
        [{ outputFormat: "json", proxies: [2_147_483_647] }, "[]\n"],
      ];
      for (const [body, want] of cases) {
        const res = await exportRaw(JSON.stringify(body));
        const label = JSON.stringify(body);
        expect([label, res.status, res.headers["cache-control"], res.headers["content-type"]]).toEqual([label, 200, "no-store", "text/plain; charset=utf-8"]);
        if (typeof want === "string") expect([label, res.text]).toEqual([label, want]);
        else expect([label, res.text]).toEqual([label, expect.stringMatching(want)]);
      }
    });

    it("ignores unknown fields and treats null as absent: {bogus: 1, proxyStatus: null} exports every proxy", async () => {
      const res = await exportRaw('{"bogus":1,"proxyStatus":null}');
      expect(res.status).toBe(200);
      expect(res.headers["content-type"]).toBe("text/plain; charset=utf-8");
      expect(res.text).toBe(everyProxy);
      // The same as an empty body and as proxyStatus "all" ...
      expect((await exportRaw("{}")).text).toBe(everyProxy);
      expect((await exportRaw('{"proxyStatus":"all"}')).text).toBe(everyProxy);
      // ... while a present proxyStatus does narrow (so the null above was really read as absent).
      expect((await exportRaw('{"bogus":1,"proxyStatus":"dead"}')).text).toBe("9.9.9.3:3128\n9.9.9.4:8000\n");
      // Unknown fields of any shape, next to nulls for the other documented fields.
      const lenient = await exportRaw(
        JSON.stringify({
          status: "alive", // not the export's name for it: ignored
          scope: "selected",
          extra: { nested: [1, 2] },
          proxies: null,
          reputationLabels: null,
          filter: null,
          http: null,
          maxTimeout: null,
          maxRetries: null,
          outputFormat: null,
          proxyStatus: null,
        }),
      );
      expect([lenient.status, lenient.text]).toEqual([200, everyProxy]);
    });
  });

  describe("GET /api/getProxyPage filter values", () => {
    let token: string;
    const ids: Record<string, number> = {};
    const fixtures: Record<string, ProxyFixture> = {
      us: { ip: "8.8.8.1", country: "US", estimatedType: "datacenter", aliveOn: ["http"], anonymity: "elite", attempt: 0, reputationLabel: "good", reputationScore: 90 },
      de: { ip: "8.8.8.2", country: "DE", estimatedType: "residential", aliveOn: ["socks5"], anonymity: "anonymous", attempt: 1, reputationLabel: "neutral", reputationScore: 50 },
      naAlive: { ip: "8.8.8.3", country: "N/A", estimatedType: "mobile", aliveOn: ["socks4"], anonymity: "transparent", attempt: 0, reputationLabel: "poor", reputationScore: 5 },
      naDead: { ip: "9.9.9.4", country: "N/A", estimatedType: "unknown" }, // anonymity N/A
      frDead: { ip: "9.9.9.5", country: "FR", estimatedType: "datacenter" }, // anonymity N/A
    };

    beforeAll(async () => {
      let userId: number;
      ({ token, userId } = await newUser());
      for (const [name, fixture] of Object.entries(fixtures)) ids[name] = await insertProxy(h.db.pool, userId, fixture);
    });

    it("are case-insensitive: n/a, us, ALIVE, SOCKS5, Datacenter, ELITE, Good give the canonical case's rows, through the fast path and Express alike", async () => {
      const pipeline = request(h.service.app);
      const cases: [string, string, string[]][] = [
        // [as typed, canonical, expected rows]
        ["country=n/a", "country=N/A", ["naAlive", "naDead"]],
        ["country=N/a", "country=N/A", ["naAlive", "naDead"]],
        ["anonymity=n/a", "anonymity=N/A", ["naDead", "frDead"]],
        ["anonymity=n/A", "anonymity=N/A", ["naDead", "frDead"]],
        ["country=us", "country=US", ["us"]],
        ["country=fr,de", "country=FR,DE", ["de", "frDead"]],
        ["status=ALIVE", "status=alive", ["us", "de", "naAlive"]],
        ["status=Dead", "status=dead", ["naDead", "frDead"]],
        ["protocol=SOCKS5", "protocol=socks5", ["de"]],
        ["protocol=Http&protocol=SOCKS4", "protocol=http&protocol=socks4", ["us", "naAlive"]],
        ["type=Datacenter", "type=datacenter", ["us", "frDead"]],
        ["type=UNKNOWN", "type=unknown", ["naDead"]],
        ["anonymity=ELITE,Transparent", "anonymity=elite,transparent", ["us", "naAlive"]],
        ["reputation=Good", "reputation=good", ["us"]],
        ["reputation=UNKNOWN", "reputation=unknown", ["naDead", "frDead"]],
        ["country=n/a&anonymity=N/a&status=DEAD", "country=N/A&anonymity=N/A&status=dead", ["naDead"]],
      ];
      for (const [typed, canonical, names] of cases) {
        const want = names.map((name) => ids[name]);
        const expected = await h.http.get(`/api/getProxyPage/1?${canonical}`).set(bearer(token));
        expect([canonical, expected.status]).toEqual([canonical, 200]);
        const body = expected.body as ListBody;
        expect([canonical, body.proxies.map((p) => p.id), body.total]).toEqual([canonical, want, want.length]);
        const viaHandler = await h.http.get(`/api/getProxyPage/1?${typed}`).set(bearer(token));
        const viaExpress = await pipeline.get(`/api/getProxyPage/1?${typed}`).set(bearer(token));
        expect([typed, viaHandler.status, viaExpress.status]).toEqual([typed, 200, 200]);
        expect([typed, viaHandler.text]).toEqual([typed, expected.text]);
        expect([typed, viaExpress.text]).toEqual([typed, expected.text]);
      }
    });
  });

  describe("POST /api/addProxies", () => {
    it("hands a large upload to checking with one wake-up of the scheduler, every proxy due at once", async () => {
      await h.deps.queues.check.queue.remove(CHECK_WAKE_JOB_ID);
      const { token, userId } = await newUser();
      // 5,001 distinct public addresses (8.8.0.0 – 8.8.19.136).
      const lines = Array.from({ length: 5001 }, (_, i) => `8.8.${i >> 8}.${i & 255}:8080`).join("\n");
      const res = await h.http.post("/api/addProxies").set(bearer(token)).attach("file", Buffer.from(lines), { filename: "p.txt", contentType: "text/plain" });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ proxyCount: 5001, details: { submittedCount: 5001, parsedCount: 5001, blacklistedCount: 0 } });
      const jobs = await h.deps.queues.check.queue.getJobs(["waiting", "delayed", "prioritized", "active", "paused", "wait"]);
      // Redis holds one job whatever the upload's size; the database holds the schedule.
      expect(jobs.map((job) => [job.id, job.name])).toEqual([[CHECK_WAKE_JOB_ID, "check-tick"]]);
      const { rows } = await h.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM proxies WHERE user_id = $1 AND next_check_at <= now()", [userId]);
      expect(rows[0]?.n).toBe(5001);
    });

    it("stores nothing when the client aborts mid-body inside a large file part, and the next upload works", async () => {
      const { token, userId } = await newUser();
      const { port }: AddressInfo = await h.service.start();
      try {
        const boundary = "----roost-abort";
        const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.txt"\r\nContent-Type: text/plain\r\n\r\n`;
        // 40,000 distinct public proxies: several 10,000-row batches go into the upload's transaction(s) before the abort.
        const lines = Array.from({ length: 40_000 }, (_, i) => `8.${(i >> 8) & 255}.${i & 255}.1:${9000 + (i >> 16)}\n`).join("");
        const sent = Buffer.from(head + lines);
        const declared = sent.length + 2_000_000; // a Content-Length well beyond what is sent, under the 10 MiB limit
        const idsDrawn = async (): Promise<number> =>
          Number((await h.db.pool.query<{ n: string }>("SELECT last_value AS n FROM proxies_id_seq")).rows[0]?.n ?? 0);
        const idsBefore = await idsDrawn();
        const socket = net.connect({ port, host: "127.0.0.1" });
        let answer = "";
        socket.setEncoding("utf8");
        socket.on("data", (chunk: string) => {
          answer += chunk;
        });
        socket.on("error", () => undefined); // destroyed by us below
        await new Promise<void>((resolve, reject) => {
          socket.once("connect", resolve);
          socket.once("error", reject);
        });
        socket.write(
          [
            "POST /api/addProxies HTTP/1.1",
            `Host: 127.0.0.1:${port}`,
            `Authorization: Bearer ${token}`,
            `Content-Type: multipart/form-data; boundary=${boundary}`,
            `Content-Length: ${declared}`,
            "",
            "",
          ].join("\r\n"),
        );
        socket.write(sent);
        // The upload is underway: ids for at least one 10,000-row batch were drawn (sequences are not
        // transactional, so this shows through the upload's open transaction).
        await waitFor(async () => (await idsDrawn()) >= idsBefore + 10_000, { timeoutMs: 20_000, what: "the upload to store its first batch" });
        expect(await storedCount(userId)).toBe(0); // nothing visible before the end
        expect(answer).toBe(""); // the server is still waiting for the rest of the body
        socket.destroy();

        // The server has finished with the abort: no statement or transaction of the gateway is left open in this
        // database, and every pooled connection is back in the pool.
        const busy = async (): Promise<number> =>
          Number(
            (
              await h.db.pool.query<{ n: string }>(
                `SELECT count(*) AS n FROM pg_stat_activity
                  WHERE datname = current_database() AND pid <> pg_backend_pid() AND (state <> 'idle' OR xact_start IS NOT NULL)`,
              )
            ).rows[0]?.n ?? 0,
          );
        await waitFor(async () => (await busy()) === 0 && h.db.pool.totalCount === h.db.pool.idleCount, {
          timeoutMs: 20_000,
          what: "the aborted upload to be rolled back",
        });
        expect(await storedCount(userId)).toBe(0);
        const count = await h.http.get("/api/getProxyCount").set(bearer(token));
        expect([count.status, count.body]).toEqual([200, 0]);

        // The upload lock and the connections were released: a normal upload of the same user goes through.
        const next = await h.http.post("/api/addProxies").set(bearer(token)).attach("file", Buffer.from("8.8.8.8:80\n8.8.4.4:3128\n"), "p.txt");
        expect(next.status).toBe(200);
        expect((next.body as UploadBody).proxyCount).toBe(2);
        expect((next.body as UploadBody).details).toMatchObject({ submittedCount: 2, parsedCount: 2 });
        const { rows } = await h.db.pool.query<{ ip: string; port: number }>("SELECT ip, port FROM proxies WHERE user_id = $1 ORDER BY id", [userId]);
        expect(rows).toEqual([
          { ip: "8.8.8.8", port: 80 },
          { ip: "8.8.4.4", port: 3128 },
        ]);
        expect((await h.http.get("/api/getProxyCount").set(bearer(token))).body).toBe(2);
      } finally {
        await h.service.stop();
      }
    });
  });
});
