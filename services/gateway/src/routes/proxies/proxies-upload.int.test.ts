import { CHECK_WAKE_JOB_ID } from "@roost/queue";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";

interface UploadBody {
  proxyCount: number;
  details: Record<string, number>;
}

const zeroCounts = {
  submittedCount: 0,
  parsedCount: 0,
  invalidFormatCount: 0,
  invalidIpCount: 0,
  invalidIpv4Count: 0,
  invalidPortCount: 0,
  blacklistedCount: 0,
  limitExceededCount: 0,
};

async function storedProxies(h: GatewayHarness, userId?: number) {
  const { rows } = await h.db.pool.query<{ ip: string; port: number; username: string; password: string; scheme_hint: string | null; country: string; estimated_type: string; asn: number | null }>(
    `SELECT ip, port, username, password, scheme_hint, country, estimated_type, asn FROM proxies ${userId ? "WHERE user_id = $1" : ""} ORDER BY id`,
    userId ? [userId] : [],
  );
  return rows;
}

async function userIdOf(h: GatewayHarness, token: string): Promise<number> {
  const res = await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${token}`);
  return (res.body as { user_id: number }).user_id;
}

describe("POST /api/addProxies", () => {
  let h: GatewayHarness;
  let token: string;
  let adminToken: string;
  beforeAll(async () => {
    h = await startGatewayHarness({ API_UPLOAD_MAX_BODY_BYTES: String(64 * 1024) });
    ({ token: adminToken } = await h.register());
  });
  afterAll(async () => {
    await h.close();
  });
  beforeEach(async () => {
    ({ token } = await h.register());
    await h.db.pool.query("DELETE FROM proxies");
    await h.db.pool.query("DELETE FROM blacklist_ranges");
  });

  const upload = () => h.http.post("/api/addProxies").set("Authorization", `Bearer ${token}`);

  it("reads file, proxyTextarea and clipboardProxies together and counts every line exactly once", async () => {
    const file = [
      "\uFEFF# my list",
      "8.8.8.8:8080",
      "alice:s3cret@8.8.4.4:3128",
      "8.8.8.8:8080", // duplicate in the upload
      "socks5://bob:pa:ss@1.1.1.1:1080",
      "proxy.example.com:8080", // hostname
      "2001:db8::1", // IPv6
      "9.9.9.9:70000", // port
      "garbage line here",
      "10.0.0.1:8080", // reserved (private)
      "10.0.0.1:8080", // reserved again: each line counts
      "",
    ].join("\r\n");
    const res = await upload()
      .attach("file", Buffer.from(file), { filename: "proxies.txt", contentType: "text/plain" })
      .field("proxyTextarea", "5.9.0.1 3128\n8.8.4.4:3128:alice:s3cret # same identity as the file's")
      .field("clipboardProxies", "http://24.5.6.7:80\n256.1.1.1:80");
    expect(res.status).toBe(200);
    const body = res.body as UploadBody;
    expect(body.details).toEqual({
      ...zeroCounts,
      submittedCount: 14,
      parsedCount: 9,
      invalidFormatCount: 1,
      invalidIpCount: 2,
      invalidIpv4Count: 1,
      invalidPortCount: 1,
      blacklistedCount: 2,
      processingMs: expect.any(Number),
    });
    // 8.8.8.8:8080, alice@8.8.4.4:3128, bob@1.1.1.1:1080, 5.9.0.1:3128, 24.5.6.7:80
    expect(body.proxyCount).toBe(5);
    const rows = await storedProxies(h);
    expect(rows.map((r) => [r.ip, r.port, r.username, r.password, r.scheme_hint])).toEqual([
      ["8.8.8.8", 8080, "", "", null],
      ["8.8.4.4", 3128, "alice", "s3cret", null],
      ["1.1.1.1", 1080, "bob", "pa:ss", "socks5"],
      ["5.9.0.1", 3128, "", "", null],
      ["24.5.6.7", 80, "", "", "http"],
    ]);
    // Country and type come from the offline databases at insert time.
    const google = rows[0];
    expect(google).toMatchObject({ country: "US", asn: 15169, estimated_type: "datacenter" });
    expect(rows[3]).toMatchObject({ country: "DE", estimated_type: "datacenter" });
    expect(rows[4]).toMatchObject({ country: "US", estimated_type: "residential" });
  });

  it("never creates a second row for a proxy the user already has, and counts it in proxyCount", async () => {
    const first = await upload().field("proxyTextarea", "8.8.8.8:80\n8.8.4.4:80");
    expect((first.body as UploadBody).proxyCount).toBe(2);
    const again = await upload().field("proxyTextarea", "8.8.8.8:80\n8.8.4.4:80\n1.1.1.1:80\n8.8.8.8:80");
    expect(again.status).toBe(200);
    expect((again.body as UploadBody).proxyCount).toBe(3);
    expect((again.body as UploadBody).details.parsedCount).toBe(4);
    expect(await storedProxies(h)).toHaveLength(3);
    const count = await h.http.get("/api/getProxyCount").set("Authorization", `Bearer ${token}`);
    expect(count.body).toBe(3);
  });

  it("keeps credentials case-sensitive and part of the identity", async () => {
    const res = await upload().field("proxyTextarea", "8.8.8.8:80:Alice:pw\n8.8.8.8:80:alice:pw\n8.8.8.8:80:alice:PW\n8.8.8.8:80\nalice:pw@8.8.8.8:80");
    expect((res.body as UploadBody).proxyCount).toBe(4);
    expect(await storedProxies(h)).toHaveLength(4);
  });

  it("stores credentials with COPY's special characters exactly (backslash, \\N, a colon in the password)", async () => {
    const { token: own } = await h.register();
    const lines = ["9.9.9.1:80:back\\slash:pa\\ss", "9.9.9.2:80:\\N:\\N", "9.9.9.3:80:u:p:w:\\t", "we\\ird:p@ss@9.9.9.4:81"];
    const res = await h.http.post("/api/addProxies").set("Authorization", `Bearer ${own}`).field("proxyTextarea", lines.join("\n"));
    expect(res.status).toBe(200);
    expect((res.body as UploadBody).details.parsedCount).toBe(4);
    const stored = await storedProxies(h, await userIdOf(h, own));
    expect(stored.map((p) => [p.ip, p.username, p.password])).toEqual([
      ["9.9.9.1", "back\\slash", "pa\\ss"],
      ["9.9.9.2", "\\N", "\\N"],
      ["9.9.9.3", "u", "p:w:\\t"],
      ["9.9.9.4", "we\\ird", "p@ss"],
    ]);
  });

  it("hands new proxies to checking: due at once, and the check scheduler woken", async () => {
    await h.deps.queues.check.queue.remove(CHECK_WAKE_JOB_ID);
    const res = await upload().field("proxyTextarea", "8.8.8.8:81\n8.8.8.8:82\n8.8.8.8:83");
    expect(res.status).toBe(200);
    const userId = await userIdOf(h, token);
    const { rows } = await h.db.pool.query<{ due: boolean }>("SELECT next_check_at <= now() AS due FROM proxies WHERE user_id = $1 AND port IN (81, 82, 83)", [userId]);
    expect(rows).toEqual([{ due: true }, { due: true }, { due: true }]);
    const wake = await h.deps.queues.check.queue.getJob(CHECK_WAKE_JOB_ID);
    expect(wake?.name).toBe("check-tick");
    // Nothing else is queued for checking: the scheduler claims due proxies into batches.
    const batches = await h.deps.queues.check.queue.getJobs(["waiting", "delayed", "prioritized", "active"]);
    expect(batches.filter((job) => job.name === "check-batch")).toEqual([]);
  });

  it("takes the two text fields as a JSON body too", async () => {
    const res = await upload().send({ proxyTextarea: "8.8.8.8:80", clipboardProxies: "8.8.4.4:80\n8.8.8.8:80" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ proxyCount: 2, details: { submittedCount: 3, parsedCount: 3 } });
    expect((await upload().send({ other: "8.8.8.8:80" })).status).toBe(400);
  });

  it("holds a JSON body to API_JSON_MAX_BODY_BYTES, not the upload limit: a larger list is a 413 and stores nothing, the same as a file goes through", async () => {
    const json = await startGatewayHarness({ API_JSON_MAX_BODY_BYTES: String(16 * 1024), API_UPLOAD_MAX_BODY_BYTES: String(256 * 1024) });
    try {
      const { token: jsonToken } = await json.register();
      const lines = Array.from({ length: 2000 }, (_, i) => `8.${(i >> 8) & 255}.${i & 255}.1:8080`).join("\n"); // ~26 KB
      const asJson = await json.http.post("/api/addProxies").set("Authorization", `Bearer ${jsonToken}`).send({ proxyTextarea: lines });
      expect([asJson.status, asJson.body]).toEqual([413, { error: expect.stringMatching(/too large/i) }]);
      expect(await storedProxies(json)).toHaveLength(0);
      const asFile = await json.http
        .post("/api/addProxies")
        .set("Authorization", `Bearer ${jsonToken}`)
        .attach("file", Buffer.from(lines), { filename: "p.txt", contentType: "text/plain" });
      expect([asFile.status, (asFile.body as UploadBody).proxyCount]).toEqual([200, 2000]);
    } finally {
      await json.close();
    }
  });

  it("reads lone surrogates in a JSON body as U+FFFD, as stored: two such names are one proxy, counted once", async () => {
    const body = '{"proxyTextarea":"8.8.5.9:80:\\ud800a:pw\\n8.8.5.9:80:\\udbffa:pw\\n8.8.5.9:80:\\ufffda:pw"}';
    const res = await upload().set("Content-Type", "application/json").send(body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ proxyCount: 1, details: { submittedCount: 3, parsedCount: 3 } });
    expect((await storedProxies(h)).map((r) => [r.ip, r.username])).toEqual([["8.8.5.9", "\uFFFDa"]]);
  });

  it("answers 400 without upload input", async () => {
    const none = await upload().field("other", "1.2.3.4:80");
    expect(none.status).toBe(400);
    expect(none.body).toEqual({ error: expect.any(String) });
    const empty = await upload().field("proxyTextarea", "").field("clipboardProxies", "");
    expect(empty.status).toBe(400);
    const notMultipart = await upload().set("Content-Type", "text/plain").send("8.8.8.8:80");
    expect(notMultipart.status).toBe(400);
    // Blank lines and comments only, in every kind of input: nothing to count is no input.
    const blank = await upload()
      .attach("file", Buffer.from("\uFEFF# nothing here\r\n\r\n   \t\n"), { filename: "blank.txt", contentType: "text/plain" })
      .field("proxyTextarea", "   \n\t\n")
      .field("clipboardProxies", "# 8.8.8.8:80");
    expect([blank.status, blank.body]).toEqual([400, { error: expect.stringContaining("empty or a comment") }]);
    const blankJson = await upload().send({ proxyTextarea: " \n# 8.8.8.8:80\n" });
    expect([blankJson.status, blankJson.body]).toEqual([400, { error: expect.stringContaining("empty or a comment") }]);
    expect(await storedProxies(h)).toHaveLength(0);
  });

  it("answers 400 to a body that ends inside a file part, whether its handler has it yet or the part is skipped", async () => {
    const boundary = "----roost-truncated";
    const part = (name: string, content: string, filename?: string): string =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ""}\r\n\r\n${content}\r\n`;
    const bodies = [
      // A file under a name the upload does not read: its stream is skipped, never handed to a handler.
      part("clipboardProxies", "8.8.8.8:80", "a.txt"),
      // A `file` part queued behind a text field whose handler is still storing it.
      `${part("proxyTextarea", "8.8.8.8:80")}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.txt"\r\n\r\n9.9.9.9:80\n`,
      // Only a file part's head.
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.txt"\r\n\r\n`,
    ];
    for (const body of bodies) {
      const res = await upload().set("Content-Type", `multipart/form-data; boundary=${boundary}`).send(body);
      expect([body, res.status, res.body]).toEqual([body, 400, { error: expect.any(String) }]);
    }
    // The gateway is still up, and nothing of the broken bodies was stored.
    const count = await h.http.get("/api/getProxyCount").set("Authorization", `Bearer ${token}`);
    expect(count.body).toBe(0);
  });

  it("answers 400 and stores nothing when an upload has more file parts or text fields than it takes, instead of dropping the rest", async () => {
    // Parts within the limits: every one counted.
    let within = upload();
    for (let i = 0; i < 10; i++) within = within.attach("file", Buffer.from(`8.8.${i}.1:80\n`), { filename: `f${i}.txt`, contentType: "text/plain" });
    const ok = await within;
    expect([ok.status, (ok.body as UploadBody).details?.submittedCount]).toEqual([200, 10]);
    await h.db.pool.query("DELETE FROM proxies");

    let files = upload();
    for (let i = 0; i < 12; i++) files = files.attach("file", Buffer.from(`8.8.${i}.1:80\n`), { filename: `f${i}.txt`, contentType: "text/plain" });
    let fields = upload();
    for (let i = 0; i < 101; i++) fields = fields.field("proxyTextarea", `8.9.${i}.1:80`);
    for (const res of [await files, await fields]) {
      expect([res.status, res.body]).toEqual([400, { error: "Too many parts: an upload takes at most 10 files and 100 text fields" }]);
    }
    expect(await storedProxies(h)).toHaveLength(0);
  });

  it("refuses reserved ranges and blacklist_ranges rows, counting them among the parsed", async () => {
    await h.db.pool.query(`INSERT INTO blacklist_ranges (cidr, source) VALUES ('8.8.4.0/24', 'test'), ('1.1.1.1/32', 'test')`);
    const res = await upload().field(
      "proxyTextarea",
      ["8.8.8.8:80", "8.8.4.4:80", "8.8.4.4:80", "1.1.1.1:80", "127.0.0.1:80", "192.168.1.1:80", "169.254.1.1:80", "224.0.0.1:80", "5.9.0.1:80"].join("\n"),
    );
    expect(res.status).toBe(200);
    expect((res.body as UploadBody).details).toMatchObject({ submittedCount: 9, parsedCount: 9, blacklistedCount: 7 });
    expect((res.body as UploadBody).proxyCount).toBe(2);
    expect((await storedProxies(h)).map((r) => r.ip)).toEqual(["8.8.8.8", "5.9.0.1"]);
  });

  it("answers 413 for a declared oversize body and stores nothing", async () => {
    const big = Array.from({ length: 8000 }, (_, i) => `8.${(i >> 8) & 255}.${i & 255}.1:8080`).join("\n");
    const res = await upload().field("proxyTextarea", big);
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ error: expect.stringMatching(/too large/i) });
    expect(await storedProxies(h)).toHaveLength(0);
  });

  it("caps a user at proxy_limits and says how many were left out", async () => {
    const plain = await h.register(); // not the first user: limits apply

    const result = await h.deps.globalConfig.update({ proxy_limits: { enabled: true, max_per_user: 3, exclude_admins: true } });
    expect(result.ok).toBe(true);
    try {
      const send = (text: string) => h.http.post("/api/addProxies").set("Authorization", `Bearer ${plain.token}`).field("proxyTextarea", text);
      const first = await send("8.8.8.1:80\n8.8.8.2:80");
      expect((first.body as UploadBody).details.limitExceededCount).toBe(0);
      const second = await send("8.8.8.1:80\n8.8.8.3:80\n8.8.8.4:80\n8.8.8.5:80\n8.8.8.4:80");
      expect(second.status).toBe(200);
      expect((second.body as UploadBody).details).toMatchObject({ parsedCount: 5, limitExceededCount: 2 });
      // 8.8.8.1 (already there) and 8.8.8.3 (fits) are in the list; .4 and .5 are not.
      expect((second.body as UploadBody).proxyCount).toBe(2);
      const userId = await userIdOf(h, plain.token);
      expect((await storedProxies(h, userId)).map((r) => r.ip)).toEqual(["8.8.8.1", "8.8.8.2", "8.8.8.3"]);
      // The admin (first user) is excluded from the limit.
      const admin = await h.http
        .post("/api/addProxies")
        .set("Authorization", `Bearer ${adminToken}`)
        .field("proxyTextarea", "8.8.8.1:80\n8.8.8.2:80\n8.8.8.3:80\n8.8.8.4:80");
      expect((admin.body as UploadBody).details.limitExceededCount).toBe(0);
    } finally {
      await h.deps.globalConfig.update({ proxy_limits: { enabled: false, max_per_user: 100000, exclude_admins: true } });
    }
  });

  it("keeps concurrent uploads of one user exact: no duplicate rows, every count right", async () => {
    const lines = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `8.8.${(from + i) >> 8}.${(from + i) & 255}:8080`).join("\n");
    const responses = await Promise.all([
      upload().field("proxyTextarea", lines(0, 600)),
      upload().field("proxyTextarea", lines(300, 900)),
      upload().field("proxyTextarea", lines(0, 900)),
    ]);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(responses.map((r) => (r.body as UploadBody).proxyCount)).toEqual([600, 600, 900]);
    expect(await storedProxies(h)).toHaveLength(900);
    const count = await h.http.get("/api/getProxyCount").set("Authorization", `Bearer ${token}`);
    expect(count.body).toBe(900);
  });

  it("counts an overlong line as one invalid format and keeps going", async () => {
    const res = await upload().attach("file", Buffer.from(`8.8.8.8:80\n${"1".repeat(20000)}\n#${"c".repeat(20000)}\n8.8.4.4:80`), "p.txt");
    expect(res.status).toBe(200);
    expect((res.body as UploadBody).details).toMatchObject({ submittedCount: 3, parsedCount: 2, invalidFormatCount: 1 });
  });

  it("needs a token", async () => {
    const res = await h.http.post("/api/addProxies").field("proxyTextarea", "8.8.8.8:80");
    expect(res.status).toBe(401);
  });
});

describe("POST /api/addProxies with ALLOW_PRIVATE_NETWORK_TARGETS", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness({ ALLOW_PRIVATE_NETWORK_TARGETS: "true" });
  });
  afterAll(async () => {
    await h.close();
  });

  it("accepts reserved ranges but still refuses blacklist_ranges", async () => {
    const { token } = await h.register();
    await h.db.pool.query(`INSERT INTO blacklist_ranges (cidr, source) VALUES ('10.1.0.0/16', 'test')`);
    const res = await h.http
      .post("/api/addProxies")
      .set("Authorization", `Bearer ${token}`)
      .field("proxyTextarea", "127.0.0.1:8080\n10.0.0.1:3128\n10.1.2.3:3128\n192.168.1.1:80");
    expect(res.status).toBe(200);
    expect((res.body as UploadBody).details).toMatchObject({ parsedCount: 4, blacklistedCount: 1 });
    expect((res.body as UploadBody).proxyCount).toBe(3);
    const { rows } = await h.db.pool.query<{ country: string; estimated_type: string }>("SELECT country, estimated_type FROM proxies");
    expect(rows.every((r) => r.country === "N/A" && r.estimated_type === "unknown")).toBe(true);
  });
});

describe("POST /api/addProxies over the limit mid-stream", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness({ API_UPLOAD_MAX_BODY_BYTES: String(640 * 1024) });
  });
  afterAll(async () => {
    await h.close();
  });

  it("answers 413 for a chunked body that passes the limit after batches were inserted on both connections, and stores nothing", async () => {
    const { token } = await h.register();
    const { port }: AddressInfo = await h.service.start();
    const boundary = "----roost-test-boundary";
    // ~940 KiB without Content-Length: the overflow shows only while streaming, after
    // about four 10,000-row batches went into the upload's two transactions.
    const lines = Array.from({ length: 60000 }, (_, i) => `8.${(i >> 8) & 255}.${i & 255}.1:${8000 + (i >> 16)}`).join("\n");
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          host: "127.0.0.1",
          port,
          method: "POST",
          path: "/api/addProxies",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": `multipart/form-data; boundary=${boundary}`, "Transfer-Encoding": "chunked" },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        },
      );
      req.on("error", reject);
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.txt"\r\nContent-Type: text/plain\r\n\r\n`);
      for (let i = 0; i < lines.length; i += 8192) req.write(lines.slice(i, i + 8192));
      req.end(`\r\n--${boundary}--\r\n`);
    });
    await h.service.stop();
    expect(status).toBe(413);
    const { rows } = await h.db.pool.query<{ stored: string; ids_used: string }>(
      "SELECT (SELECT count(*) FROM proxies) AS stored, (SELECT last_value FROM proxies_id_seq) AS ids_used",
    );
    expect(Number(rows[0]?.stored)).toBe(0);
    // Sequences are not transactional: ids were drawn for rows that were then rolled back.
    expect(Number(rows[0]?.ids_used)).toBeGreaterThanOrEqual(30000);
    // Both connections went back to the pool with their transactions rolled back.
    const open = await h.db.pool.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'");
    expect(open.rowCount).toBe(0);
    const count = await h.http.get("/api/getProxyCount").set("Authorization", `Bearer ${token}`);
    expect(count.body).toBe(0);
  });
});

describe("POST /api/addProxies while the account is deleted", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it("answers 401 and stores nothing once the account is gone, even with a token that still verifies", async () => {
    const { token } = await h.register();
    const userId = await userIdOf(h, token);
    // What a deletion that committed between the token check and the upload's transaction leaves.
    await h.db.pool.query("INSERT INTO account_purges (user_id) VALUES ($1)", [userId]);
    await h.db.pool.query("DELETE FROM users WHERE id = $1", [userId]);
    const res = await h.http.post("/api/addProxies").set("Authorization", `Bearer ${token}`).field("proxyTextarea", "8.8.8.8:80");
    expect([res.status, res.body]).toEqual([401, { error: "Invalid token" }]);
    expect(await storedProxies(h, userId)).toHaveLength(0);
  });

  it("makes a deletion wait for an upload in progress, so the purge after it sees every row of the upload", async () => {
    const { token, password } = await h.register();
    const userId = await userIdOf(h, token);
    const { port }: AddressInfo = await h.service.start();
    const boundary = "----roost-held-upload";
    let uploadStatus = 0;
    const req = http.request({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: "/api/addProxies",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": `multipart/form-data; boundary=${boundary}`, "Transfer-Encoding": "chunked" },
    });
    const uploaded = new Promise<void>((resolve, reject) => {
      req.on("response", (res) => {
        uploadStatus = res.statusCode ?? 0;
        res.resume();
        res.on("end", resolve);
      });
      req.on("error", reject);
    });
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.txt"\r\n\r\n8.8.8.8:80\n8.8.4.4:80\n`);
    // The upload's transaction is open and past its start (lock, user row, first look-ups) while the body is still coming.
    await waitFor(
      async () =>
        (
          await h.db.pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'
              AND query NOT ILIKE '%advisory%' AND query <> 'BEGIN'`,
          )
        ).rowCount === 1,
      { what: "the upload's open transaction" },
    );
    let deleted = false;
    const deletion = h.http
      .post("/api/deleteAccount")
      .set("Authorization", `Bearer ${token}`)
      .send({ password })
      .then((res) => {
        deleted = true;
        return res;
      });
    await waitFor(
      async () =>
        (await h.db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE 'DELETE FROM %users%'`)).rowCount === 1,
      { what: "the account's deletion waiting for the upload" },
    );
    expect(deleted).toBe(false);
    req.end(`1.1.1.1:80\r\n--${boundary}--\r\n`);
    await uploaded;
    const deletionResponse = await deletion;
    await h.service.stop();
    expect([uploadStatus, deletionResponse.status]).toEqual([200, 200]);
    // Every row of the upload is in, and the account is queued for the purge that removes them.
    expect(await storedProxies(h, userId)).toHaveLength(3);
    expect((await h.db.pool.query("SELECT 1 FROM account_purges WHERE user_id = $1", [userId])).rowCount).toBe(1);
  });
});
