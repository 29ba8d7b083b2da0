import http from "node:http";
import type { AddressInfo } from "node:net";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { insertProtocolStatus, insertProxy, userIdOfToken, type ProxyFixture } from "../../test-support/proxy-fixtures.js";
import { Writable } from "node:stream";
import {
  csvLine,
  emptyFilters,
  EXPORT_COLUMNS,
  inlineSqlCondition,
  jsonObject,
  parseOutputFormat,
  protocolsOfMask,
  streamExport,
  type ExportRow,
} from "@roost/inventory";

describe("delete and export", () => {
  let h: GatewayHarness;
  let token: string;
  let other: string;
  let userId: number;
  let otherId: number;
  let ids: Record<string, number>;
  let otherIds: number[];

  const fixtures: Record<string, ProxyFixture> = {
    httpFast: { ip: "8.8.8.1", port: 80, aliveOn: ["http"], responseTime: 100, attempt: 0, country: "US", estimatedType: "datacenter", reputationLabel: "good", reputationScore: 90 },
    multi: { ip: "8.8.8.2", port: 1080, username: "alice", password: "pa:ss@1", aliveOn: ["http", "socks5"], responseTime: 300, attempt: 1, country: "DE", reputationLabel: "neutral", reputationScore: 50.5 },
    socks4: { ip: "8.8.8.3", port: 4145, aliveOn: ["socks4"], responseTime: 4000, attempt: 2, anonymity: "transparent", country: "US", reputationLabel: "poor", reputationScore: 10 },
    deadHint: { ip: "9.9.9.4", port: 1081, schemeHint: "socks5", country: "FR" },
    deadPlain: { ip: "9.9.9.5", port: 3128, username: "bob", password: "x,y\"z", country: "N/A" },
  };

  const authed = (method: "post" | "delete", path: string, as = token) => h.http[method](path).set("Authorization", `Bearer ${as}`);
  const exportText = async (body: unknown, as = token): Promise<string> => {
    const res = await authed("post", "/api/user/export", as).send(body as object);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
    return res.text;
  };
  const remaining = async (user = userId): Promise<string[]> => {
    const { rows } = await h.db.pool.query<{ ip: string }>("SELECT ip FROM proxies WHERE user_id = $1 ORDER BY id", [user]);
    return rows.map((r) => r.ip);
  };

  beforeAll(async () => {
    h = await startGatewayHarness();
    ({ token } = await h.register());
    ({ token: other } = await h.register());
    userId = await userIdOfToken(h, token);
    otherId = await userIdOfToken(h, other);
  });
  afterAll(async () => {
    await h.close();
  });
  beforeEach(async () => {
    await h.db.pool.query("DELETE FROM proxies");
    ids = {};
    for (const [name, fixture] of Object.entries(fixtures)) ids[name] = await insertProxy(h.db.pool, userId, fixture);
    // multi is alive on http (slower) and socks5 (faster): socks5 is its protocol.
    await insertProtocolStatus(h.db.pool, ids.multi ?? 0, { protocol: "http", alive: true, responseTime: 450 });
    await insertProtocolStatus(h.db.pool, ids.multi ?? 0, { protocol: "socks5", alive: true, responseTime: 300 });
    otherIds = [await insertProxy(h.db.pool, otherId, { ip: "7.7.7.1" }), await insertProxy(h.db.pool, otherId, { ip: "7.7.7.2", aliveOn: ["http"] })];
  });

  describe("DELETE /api/proxies", () => {
    it("Mode A deletes the listed ids of the caller", async () => {
      const res = await authed("delete", "/api/proxies").send([ids.httpFast, ids.socks4, ids.socks4]);
      expect(res.status).toBe(200);
      expect(res.body).toBe("Deleted 2 proxies.");
      expect(await remaining()).toEqual(["8.8.8.2", "9.9.9.4", "9.9.9.5"]);
      expect((await h.http.get("/api/getProxyCount").set("Authorization", `Bearer ${token}`)).body).toBe(3);
    });

    it("never deletes another user's proxies: their ids match nothing", async () => {
      const res = await authed("delete", "/api/proxies").send(otherIds);
      expect(res.status).toBe(200);
      expect(res.body).toBe("No proxies matched the delete criteria.");
      const modeB = await authed("delete", "/api/proxies").send({ proxies: otherIds, scope: "selected" });
      expect(modeB.body).toBe("No proxies matched the delete criteria.");
      expect(await remaining(otherId)).toEqual(["7.7.7.1", "7.7.7.2"]);
      // scope all deletes only the caller's own proxies.
      const all = await authed("delete", "/api/proxies", other).send({ scope: "all" });
      expect(all.body).toBe("Deleted 2 proxies.");
      expect(await remaining()).toHaveLength(5);
    });

    it("refuses an empty selection and a body that would widen to everything", async () => {
      for (const body of [[], { proxies: [] }, { proxies: [], scope: "selected" }, { scope: "selected" }, { filter: true, proxyStatus: "dead" }, {}]) {
        const res = await authed("delete", "/api/proxies").send(body);
        expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), 400]);
        expect(res.body).toEqual({ error: expect.any(String) });
      }
      for (const body of [["a"], [0], [-1], { proxies: [1], scope: "some" }, { scope: "all", proxyStatus: "zombie" }, { scope: "all", reputationLabels: ["great"] }, "1,2"]) {
        const res = await authed("delete", "/api/proxies").set("Content-Type", "application/json").send(JSON.stringify(body));
        expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), 400]);
      }
      expect(await remaining()).toHaveLength(5);
    });

    it("Mode B selected: the listed ids, narrowed by the filter fields exactly as export applies them", async () => {
      // filter false: proxyStatus and reputationLabels still apply (a dead proxy survives "alive"),
      // the protocol and timing fields do not.
      const plain = await authed("delete", "/api/proxies").send({ proxies: [ids.httpFast, ids.deadHint], filter: false, proxyStatus: "alive", socks5: true, maxTimeout: 1 });
      expect(plain.body).toBe("Deleted 1 proxies.");
      const labels = await authed("delete", "/api/proxies").send({ proxies: [ids.deadHint], reputationLabels: ["good"] });
      expect(labels.body).toBe("No proxies matched the delete criteria.");
      const filtered = await authed("delete", "/api/proxies").send({ proxies: [ids.multi, ids.socks4, ids.deadPlain], scope: "selected", filter: true, proxyStatus: "alive", socks5: true });
      expect(filtered.body).toBe("Deleted 1 proxies.");
      expect(await remaining()).toEqual(["8.8.8.3", "9.9.9.4", "9.9.9.5"]);
    });

    it("Mode B all: everything matching the filter; ids are ignored", async () => {
      const dead = await authed("delete", "/api/proxies").send({ scope: "all", proxyStatus: "dead", proxies: [ids.httpFast] });
      expect(dead.body).toBe("Deleted 2 proxies.");
      expect(await remaining()).toEqual(["8.8.8.1", "8.8.8.2", "8.8.8.3"]);
      const slow = await authed("delete", "/api/proxies").send({ scope: "all", filter: true, maxTimeout: 1000, reputationLabels: ["good", "neutral"] });
      expect(slow.body).toBe("Deleted 2 proxies.");
      const none = await authed("delete", "/api/proxies").send({ scope: "all", filter: true, http: true });
      expect(none.body).toBe("No proxies matched the delete criteria.");
      const rest = await authed("delete", "/api/proxies").send({ scope: "all" });
      expect(rest.body).toBe("Deleted 1 proxies.");
      expect(await remaining()).toEqual([]);
      expect(await remaining(otherId)).toHaveLength(2);
    });

    it("filter fields with filter false do not narrow a scope-all delete, except proxyStatus and reputationLabels", async () => {
      const res = await authed("delete", "/api/proxies").send({ scope: "all", filter: false, http: true, maxTimeout: 1, maxRetries: 0, reputationLabels: ["unknown"] });
      expect(res.body).toBe("Deleted 2 proxies.");
      expect(await remaining()).toEqual(["8.8.8.1", "8.8.8.2", "8.8.8.3"]);
    });

    it("cascades to per-protocol results", async () => {
      await authed("delete", "/api/proxies").send([ids.multi]);
      const { rows } = await h.db.pool.query("SELECT 1 FROM proxy_protocol_status WHERE proxy_id = $1", [ids.multi]);
      expect(rows).toHaveLength(0);
    });
  });

  describe("POST /api/user/export", () => {
    it("defaults to ip:port lines of every proxy in id order", async () => {
      expect(await exportText({})).toBe("8.8.8.1:80\n8.8.8.2:1080\n8.8.8.3:4145\n9.9.9.4:1081\n9.9.9.5:3128\n");
    });

    it("fills templates by whole words and drops username:password@ for proxies without credentials", async () => {
      const text = await exportText({ outputFormat: "protocol://username:password@ip:port" });
      expect(text.split("\n")).toEqual([
        "http://8.8.8.1:80",
        "socks5://alice:pa:ss@1@8.8.8.2:1080", // fastest alive protocol
        "socks4://8.8.8.3:4145",
        "socks5://9.9.9.4:1081", // dead: the upload's scheme hint
        "http://bob:x,y\"z@9.9.9.5:3128", // dead, no hint: http
        "",
      ]);
      // Repeated costly placeholders are computed once per row (templateLineSql's LATERAL), with the text each gives alone.
      const repeated = await exportText({ outputFormat: "protocol://username:password@ip:port protocol reputation_score protocol reputation_score" });
      const protocols = (await exportText({ outputFormat: "protocol" })).split("\n");
      const scores = (await exportText({ outputFormat: "reputation_score" })).split("\n");
      expect(repeated.split("\n")).toEqual(
        text.split("\n").map((line, i) => (line === "" ? "" : `${line} ${protocols[i]} ${scores[i]} ${protocols[i]} ${scores[i]}`)),
      );
      expect(scores.slice(0, 2)).toEqual(["90", "50.5"]);
      const colon = await exportText({ outputFormat: "ip:port:username:password" });
      expect(colon.split("\n").slice(0, 2)).toEqual(["8.8.8.1:80", "8.8.8.2:1080:alice:pa:ss@1"]);
      const words = await exportText({ outputFormat: "ip;port;country;alive;type;time;anonymity;reputation;reputation_label;reputation_score;zip;ports;ipport" });
      expect(words.split("\n")[0]).toBe("8.8.8.1;80;US;true;datacenter;100;elite;good;good;90;zip;ports;ipport");
      expect(words.split("\n")[3]).toBe("9.9.9.4;1081;FR;false;unknown;0;N/A;unknown;unknown;0;zip;ports;ipport");
    });

    it("applies proxyStatus, reputationLabels and proxies always, the rest only with filter", async () => {
      expect(await exportText({ proxyStatus: "alive" })).toBe("8.8.8.1:80\n8.8.8.2:1080\n8.8.8.3:4145\n");
      expect(await exportText({ proxyStatus: "dead" })).toBe("9.9.9.4:1081\n9.9.9.5:3128\n");
      expect(await exportText({ proxyStatus: "all", reputationLabels: ["poor", "unknown"] })).toBe("8.8.8.3:4145\n9.9.9.4:1081\n9.9.9.5:3128\n");
      expect(await exportText({ proxies: [ids.deadPlain, ids.httpFast, ...otherIds] })).toBe("8.8.8.1:80\n9.9.9.5:3128\n");
      expect(await exportText({ filter: false, socks4: true, maxTimeout: 1, maxRetries: 0 })).toBe("8.8.8.1:80\n8.8.8.2:1080\n8.8.8.3:4145\n9.9.9.4:1081\n9.9.9.5:3128\n");
      expect(await exportText({ filter: true, socks4: true, socks5: true })).toBe("8.8.8.2:1080\n8.8.8.3:4145\n");
      expect(await exportText({ filter: true, http: true, https: true, socks4: true, socks5: true, proxyStatus: "all" })).toBe(
        "8.8.8.1:80\n8.8.8.2:1080\n8.8.8.3:4145\n9.9.9.4:1081\n9.9.9.5:3128\n",
      );
      expect(await exportText({ filter: true, maxTimeout: 500, proxyStatus: "alive" })).toBe("8.8.8.1:80\n8.8.8.2:1080\n");
      expect(await exportText({ filter: true, maxRetries: 1 })).toBe("8.8.8.1:80\n8.8.8.2:1080\n");
      expect(await exportText({ proxyStatus: "alive", proxies: [ids.deadHint] })).toBe("");
    });

    it("applies the same filters to csv and json (their COPY carries the values as literals)", async () => {
      const requests = [
        { proxyStatus: "alive" },
        { proxyStatus: "dead" },
        { reputationLabels: ["poor", "unknown"] },
        { proxies: [ids.deadPlain, ids.httpFast, ...otherIds] },
        { filter: true, socks4: true, socks5: true },
        { filter: true, maxTimeout: 500, proxyStatus: "alive" },
        { filter: true, maxRetries: 1 },
        { proxyStatus: "alive", proxies: [ids.deadHint] },
      ];
      for (const request of requests) {
        const lines = await exportText({ ...request, outputFormat: "ip:port" });
        const csv = (await exportText({ ...request, outputFormat: "csv" })).split("\n").slice(1, -1);
        const json = JSON.parse(await exportText({ ...request, outputFormat: "json" })) as { ip: string; port: number }[];
        expect([request, csv.map((line) => line.split(",").slice(1, 3).join(":"))]).toEqual([request, lines.split("\n").slice(0, -1)]);
        expect([request, json.map((row) => `${row.ip}:${row.port}`)]).toEqual([request, lines.split("\n").slice(0, -1)]);
      }
    });

    it("gives json and csv with the documented columns", async () => {
      const json = JSON.parse(await exportText({ outputFormat: "json", proxies: [ids.multi, ids.deadHint] })) as unknown[];
      expect(json).toEqual([
        {
          id: ids.multi,
          ip: "8.8.8.2",
          port: 1080,
          username: "alice",
          password: "pa:ss@1",
          protocols: ["http", "socks5"],
          country: "DE",
          type: "unknown",
          anonymity: "elite",
          response_time: 300,
          alive: true,
          latest_check: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          reputation_label: "neutral",
          reputation_score: 50.5,
        },
        { id: ids.deadHint, ip: "9.9.9.4", port: 1081, username: "", password: "", protocols: [], country: "FR", type: "unknown", anonymity: "N/A", response_time: 0, alive: false, latest_check: null, reputation_label: "unknown", reputation_score: 0 },
      ]);
      expect(JSON.parse(await exportText({ outputFormat: "JSON", proxyStatus: "alive", reputationLabels: ["neutral"], proxies: [ids.deadHint] }))).toEqual([]);
      const csv = (await exportText({ outputFormat: "csv", proxies: [ids.multi, ids.deadPlain] })).split("\n");
      expect(csv[0]).toBe("id,ip,port,username,password,protocols,country,type,anonymity,response_time,alive,latest_check,reputation_label,reputation_score");
      expect(csv[1]).toMatch(new RegExp(`^${ids.multi},8\\.8\\.8\\.2,1080,alice,pa:ss@1,http;socks5,DE,unknown,elite,300,true,\\d{4}-[^,]+Z,neutral,50\\.5$`));
      expect(csv[2]).toBe(`${ids.deadPlain},9.9.9.5,3128,bob,"x,y""z",,N/A,unknown,N/A,0,false,,unknown,0`);
      expect(csv[3]).toBe("");
    });

    it("writes each json object exactly as JSON.stringify would (escapes included)", async () => {
      // The json objects are written from COPY's text (proxy-export-copy.ts); they must be byte for byte what JavaScript writes.
      const password = 'q"b\\s\u0001t\tn\nu\u00e9\u2028\ud83d\ude00/<>';
      const tricky = await insertProxy(h.db.pool, userId, { ip: "8.8.8.9", port: 9, username: "\u007f~", password, reputationLabel: "good", reputationScore: 0.1 });
      const text = await exportText({ outputFormat: "json", proxies: [ids.multi, ids.deadHint, tricky] });
      const lines = text.split("\n");
      expect(lines[0]).toBe("[");
      expect(lines.slice(-2)).toEqual(["]", ""]);
      const objects = lines.slice(1, -2).map((line, i, all) => (i < all.length - 1 ? line.replace(/,$/, "") : line));
      expect(objects).toHaveLength(3);
      for (const line of objects) expect(line).toBe(JSON.stringify(JSON.parse(line)));
      expect(JSON.parse(objects[2] ?? "null")).toMatchObject({ id: tricky, username: "\u007f~", password, reputation_score: 0.1 });
    });

    it("gives csv and json byte for byte as csvLine and jsonObject write the rows a plain SELECT reads", async () => {
      const odd = [
        { username: 'q"b\\s\u0001t\tn\nu\u00e9\u2028\ud83d\ude00/<>', password: "x,y\"z", reputationScore: 0.1 },
        { username: "=HYPERLINK(1)", password: "+1", country: "N/A", reputationScore: 1e-5 },
        { username: "-2", password: "@sum", reputationScore: 12_345_678 },
        { username: "\tlead", password: "\rcr", reputationScore: -0 },
        { username: " padded", password: "padded ", reputationScore: Number.NaN },
        { username: "\\N", password: "back\\slash\b\f\v", reputationScore: Number.POSITIVE_INFINITY },
        { username: "\u007f~", password: "\u00a0nbsp", estimatedType: "résidentiel" },
      ];
      for (const [i, fixture] of odd.entries()) await insertProxy(h.db.pool, userId, { ip: `8.8.9.${i + 1}`, aliveOn: ["https"], latestCheck: new Date(Date.UTC(2026, 10, 24, 1, 2, 3, i)), ...fixture });
      // More digits than latest_check keeps (it rounds to milliseconds): the export gives what the driver's Date gives.
      await h.db.pool.query("UPDATE proxies SET latest_check = '2026-11-24 01:02:03.987654+00' WHERE user_id = $1 AND ip = '8.8.9.1'", [userId]);
      const { rows } = await h.db.pool.query<{
        id: number; ip: string; port: number; username: string; password: string; alive_protocols: number; country: string; estimated_type: string;
        anonymity_level: string; response_time: number; alive: boolean; latest_check: Date | null; reputation_label: string; reputation_score: number;
      }>("SELECT * FROM proxies WHERE user_id = $1 ORDER BY id", [userId]);
      const exportRows: ExportRow[] = rows.map((r) => ({
        id: r.id, ip: r.ip, port: r.port, username: r.username, password: r.password, protocols: protocolsOfMask(r.alive_protocols), protocol: "http",
        country: r.country, type: r.estimated_type, anonymity: r.anonymity_level, responseTime: r.response_time, alive: r.alive,
        latestCheck: r.latest_check === null ? null : r.latest_check.toISOString(), reputationLabel: r.reputation_label, reputationScore: r.reputation_score,
      }));
      expect(exportRows).toHaveLength(Object.keys(fixtures).length + odd.length);
      expect(await exportText({ outputFormat: "csv" })).toBe(`${EXPORT_COLUMNS.join(",")}\n${exportRows.map((r) => `${csvLine(r)}\n`).join("")}`);
      expect(await exportText({ outputFormat: "json" })).toBe(`[${exportRows.map((r, i) => `${i === 0 ? "\n" : ",\n"}${jsonObject(r)}`).join("")}\n]\n`);
      expect(await exportText({ outputFormat: "csv", proxies: [otherIds[0] ?? 0] })).toBe(`${EXPORT_COLUMNS.join(",")}\n`);
      expect(await exportText({ outputFormat: "json", proxies: [otherIds[0] ?? 0] })).toBe("[]\n");
    });

    it("gives line templates byte for byte as LineTemplate.render writes the rows a plain SELECT reads", async () => {
      // PostgreSQL writes the lines (templateLineSql); the scores cover every form its text and JavaScript's take.
      const scores = [
        0, 1e-5, -1.5e-5, 1.5e-7, 1e-6, 9.9999993e-5, 1e-4, 0.1, 50.5, 123_456.7, 999_999.94, 1e6, 12_345_678, 3.4e20, 1e21, 1.5e25, -2e22,
        3.4028235e38, 1.4e-45, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY,
      ];
      // And a few hundred reals from random bit patterns (every exponent), seeded so a failure repeats.
      let seed = 0x2545f491;
      const bits = new Uint32Array(1);
      const real = new Float32Array(bits.buffer);
      while (scores.length < 400) {
        seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
        bits[0] = Math.imul(seed ^ (seed >>> 15), 2_246_822_519) >>> 0;
        if (Number.isFinite(real[0])) scores.push(real[0] ?? 0);
      }
      const credentials = [
        { username: "", password: "" },
        { username: "", password: "only-password" },
        { username: "only-user", password: "" },
        { username: 'q"b\\s\u0001t\tn\nu\u00e9\u2028\ud83d\ude00/<>', password: "back\\slash\b\f\v\r" },
        { username: "it's", password: "E'x' || 'y' \\" },
      ];
      for (const [i, score] of scores.entries()) {
        const id = await insertProxy(h.db.pool, userId, {
          ip: `8.9.${i >> 8}.${i & 255}`,
          port: 1 + i,
          ...credentials[i % credentials.length],
          country: i % 7 === 0 ? "résumé" : "DE",
          aliveOn: i % 3 === 0 ? ["socks4"] : [],
          responseTime: i * 13,
          reputationLabel: i % 2 === 0 ? "good" : "unknown",
          reputationScore: score,
        });
        if (i === 0) await h.db.pool.query("UPDATE proxies SET reputation_score = '-0' WHERE id = $1", [id]);
      }
      const { rows } = await h.db.pool.query<{
        ip: string; port: number; username: string; password: string; country: string; estimated_type: string;
        anonymity_level: string; response_time: number; alive: boolean; reputation_label: string; reputation_score: number;
      }>("SELECT * FROM proxies WHERE user_id = $1 ORDER BY id", [userId]);
      const exportRows: ExportRow[] = rows.map((r) => ({
        id: 0, ip: r.ip, port: r.port, username: r.username, password: r.password, protocols: [], protocol: "http", country: r.country,
        type: r.estimated_type, anonymity: r.anonymity_level, responseTime: r.response_time, alive: r.alive, latestCheck: null,
        reputationLabel: r.reputation_label, reputationScore: r.reputation_score,
      }));
      expect(exportRows.length).toBe(Object.keys(fixtures).length + scores.length);
      for (const outputFormat of [
        "ip:port",
        "username:password@ip:port # country alive type time anonymity reputation reputation_label reputation_score",
        "ip:port:username:password",
        "'ip' \\ E'port' %s $1 ${username}",
        "reputation_score",
      ]) {
        const template = parseOutputFormat(outputFormat);
        if (template.kind !== "template") throw new Error(`${outputFormat} is not a template`);
        const want = exportRows.map((r) => `${template.template.render(r)}\n`).join("");
        expect([outputFormat, await exportText({ outputFormat })]).toEqual([outputFormat, want]);
      }
    });

    it("writes the filter's values into the COPY as literals that mean what the parameters meant", async () => {
      const evil = "x'); DROP TABLE proxies; --\\' $1 \u00e9";
      const condition = inlineSqlCondition({ text: "$1::text AS text, $2::int[] AS ids, $3::text[] AS labels, $4 AS n", params: [evil, [1, -2], [evil, ""], -7] });
      const { rows } = await h.db.pool.query(`SELECT ${condition}`);
      expect(rows).toEqual([{ text: evil, ids: [1, -2], labels: [evil, ""], n: -7 }]);
    });

    it("exports only the caller's proxies", async () => {
      expect(await exportText({}, other)).toBe("7.7.7.1:8080\n7.7.7.2:8080\n");
    });

    it("treats an empty proxies or reputationLabels list as no restriction", async () => {
      const everyProxy = "8.8.8.1:80\n8.8.8.2:1080\n8.8.8.3:4145\n9.9.9.4:1081\n9.9.9.5:3128\n";
      for (const body of [{ proxies: [] }, { reputationLabels: [] }, { proxies: [], reputationLabels: [] }]) {
        expect([body, await exportText(body)]).toEqual([body, everyProxy]);
        expect([body, await exportText(body, other)]).toEqual([body, "7.7.7.1:8080\n7.7.7.2:8080\n"]);
        // json runs a COPY with the filter inlined: the empty lists must not restrict it either.
        const json = JSON.parse(await exportText({ ...body, outputFormat: "json" })) as { id: number }[];
        expect([body, json.map((row) => row.id)]).toEqual([body, Object.values(ids)]);
      }
    });

    it("with filter, one protocol and proxyStatus dead exports the dead proxies (none of them alive on it)", async () => {
      // A proxy checked on http and socks5 and dead on both, next to the never-checked dead fixtures.
      const checkedDead = await insertProxy(h.db.pool, userId, { ip: "9.9.9.6", port: 8000, attempt: 1, latestCheck: new Date() });
      await insertProtocolStatus(h.db.pool, checkedDead, { protocol: "http", alive: false, attempt: 1 });
      await insertProtocolStatus(h.db.pool, checkedDead, { protocol: "socks5", alive: false, attempt: 1 });
      for (const protocol of ["http", "https", "socks4", "socks5"]) {
        const body = { filter: true, [protocol]: true, proxyStatus: "dead" };
        expect([protocol, await exportText(body)]).toEqual([protocol, "9.9.9.4:1081\n9.9.9.5:3128\n9.9.9.6:8000\n"]);
        const json = JSON.parse(await exportText({ ...body, outputFormat: "json" })) as { id: number }[];
        expect([protocol, json.map((row) => row.id)]).toEqual([protocol, [ids.deadHint, ids.deadPlain, checkedDead]]);
      }
      // The same protocol without proxyStatus keeps the proxies alive on it instead.
      expect(await exportText({ filter: true, socks5: true })).toBe("8.8.8.2:1080\n");
    });

    /** An export over a real socket: its status and first chunk, after which the client stops reading (the server must wait, not buffer the rest). */
    const startPausedExport = (port: number, body: object): Promise<{ status: number; received: number }> =>
      new Promise((resolve, reject) => {
        const req = http.request(
          { host: "127.0.0.1", port, method: "POST", path: "/api/user/export", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" } },
          (res) => {
            res.once("data", (chunk: Buffer) => {
              res.pause();
              resolve({ status: res.statusCode ?? 0, received: chunk.length });
            });
          },
        );
        req.on("error", reject);
        req.end(JSON.stringify(body));
      });

    it("streams the COPY with backpressure and drops its connection when the client goes away", async () => {
      // ~1 KB a row (a long user name), ~60 MB of json in all: far more than socket buffers hold.
      await h.db.pool.query(
        `INSERT INTO proxies (user_id, ip, port, username) SELECT $1, '12.' || (i >> 16) || '.' || ((i >> 8) & 255) || '.' || (i & 255), 8080, repeat('u', 900) FROM generate_series(1, 60000) i`,
        [userId],
      );
      const copying = async () =>
        Number(
          (
            await h.db.pool.query<{ n: string }>(
              `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'COPY (SELECT%'`,
            )
          ).rows[0]?.n ?? 0,
        );
      /** The COPY waits to write to the gateway (its socket is full) and has produced this many rows so far; null when no COPY waits so. */
      const blockedCopyRows = async (): Promise<number | null> => {
        const { rows } = await h.db.pool.query<{ tuples: string }>(
          `SELECT c.tuples_processed AS tuples FROM pg_stat_progress_copy c JOIN pg_stat_activity a USING (pid)
            WHERE c.datname = current_database() AND c.command = 'COPY TO' AND a.wait_event = 'ClientWrite'`,
        );
        return rows[0] ? Number(rows[0].tuples) : null;
      };
      for (const outputFormat of ["ip:port:username:password", "csv", "json"]) {
        const { port }: AddressInfo = await h.service.start();
        try {
          const { status, received } = await startPausedExport(port, { outputFormat });
          expect([outputFormat, status]).toEqual([outputFormat, 200]);
          expect(received).toBeGreaterThan(0);
          // While the client does not read, the gateway stops reading the COPY: PostgreSQL waits to write and its row count
          // stops moving, with most rows not produced (a gateway that ignored backpressure would let the COPY run to its end).
          let previous: number | null = null;
          const produced = await waitFor(
            async () => {
              const now = await blockedCopyRows();
              const settled = now !== null && now === previous;
              previous = now;
              return settled ? now : null;
            },
            { timeoutMs: 10_000, intervalMs: 200, what: "the COPY to stop, blocked on the gateway" },
          );
          expect(produced).toBeLessThan(30_000);
          expect(await copying()).toBe(1);
          await h.service.stop(0);
          await waitFor(async () => (await copying()) === 0, { timeoutMs: 10_000 });
          await waitFor(async () => h.db.pool.totalCount === h.db.pool.idleCount, { timeoutMs: 10_000 });
        } finally {
          await h.service.stop();
        }
      }
      // Whole exports still work on the pool afterwards.
      expect((await exportText({ outputFormat: "csv" })).split("\n")).toHaveLength(Object.keys(fixtures).length + 60_000 + 2);
    });

    it("ends, and frees its connection, when the stream closes while the export waits for it to drain", async () => {
      for (const outputFormat of ["ip:port", "csv", "json"]) {
        // Takes nothing: the first write fills it, then it is destroyed (a client that left) instead of draining.
        const stream = new Writable({
          highWaterMark: 1,
          write() {
            setImmediate(() => stream.destroy());
          },
        });
        const written = await streamExport(h.db.pool, userId, emptyFilters(), parseOutputFormat(outputFormat), { begin: () => undefined, stream });
        expect([outputFormat, written <= Object.keys(fixtures).length]).toEqual([outputFormat, true]);
        await waitFor(async () => h.db.pool.totalCount === h.db.pool.idleCount, { timeoutMs: 10_000 });
      }
    });

    it("answers 400 with a JSON {error} body for a malformed request", async () => {
      const bodies: unknown[] = [
        { proxyStatus: "zombie" },
        { reputationLabels: ["great"] },
        { proxies: ["x"] },
        { proxies: [1.5] },
        { maxTimeout: -1 },
        { maxTimeout: 1.5 },
        { filter: "yes" },
        { outputFormat: 5 },
        { outputFormat: "x".repeat(1001) }, // the limit is 1000 characters
        [1, 2],
      ];
      for (const body of bodies) {
        const res = await authed("post", "/api/user/export").set("Content-Type", "application/json").send(JSON.stringify(body));
        const label = JSON.stringify(body).slice(0, 40);
        expect([label, res.status, res.headers["content-type"], res.body]).toEqual([
          label,
          400,
          expect.stringMatching(/^application\/json/),
          { error: expect.any(String) },
        ]);
      }
      expect((await h.http.post("/api/user/export").send({})).status).toBe(401);
    });
  });
});
