import { execFileSync } from "node:child_process";
import http from "node:http";
import https from "node:https";
import net from "node:net";

import { closedPort, peerBinariesAvailable, startDante, startMicrosocks, startNginxJudge, startNginxListServer, startSquid, startTarpit, startTinyproxy, type NginxJudge, type ProxyPeer, waitFor } from "../index.js";

// These tests check the harness itself with plain Node clients; the dialers have their own tests in @roost/net.
const available = peerBinariesAvailable("tinyproxy", "squid", "danted", "microsocks", "nginx", "openssl");
const describePeers = available ? describe : describe.skip;

function get(url: string, options: https.RequestOptions = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = (url.startsWith("https:") ? https : http).get(url, options, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on("error", reject);
  });
}

/** Absolute-form GET through an HTTP proxy. */
function viaHttpProxy(proxy: ProxyPeer, url: string, auth?: string): Promise<{ status: number; body: string }> {
  return get(`http://${proxy.host}:${proxy.port}`, {
    path: url,
    headers: { host: new URL(url).host, ...(auth ? { "proxy-authorization": `Basic ${Buffer.from(auth).toString("base64")}` } : {}) },
  });
}

/** Live (not zombie) PIDs whose process group is `pgid`. */
function groupMembers(pgid: number): number[] {
  const out = execFileSync("ps", ["-eo", "pid=,pgid=,stat="], { encoding: "utf8" });
  return out
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter(([, group, stat]) => Number(group) === pgid && !stat?.startsWith("Z"))
    .map(([pid]) => Number(pid));
}

describePeers("test peers", () => {
  let judge: NginxJudge;

  beforeAll(async () => {
    judge = await startNginxJudge();
  });
  afterAll(async () => {
    await judge?.stop();
  });

  it("nginx judge answers on http and https (test CA) with the client address and headers", async () => {
    const plain = await get(judge.httpUrl, { headers: { "x-probe": "p1" } });
    expect(plain.status).toBe(200);
    expect(plain.body).toContain("REMOTE_ADDR = 127.0.0.1");
    expect(plain.body.toLowerCase()).toContain("x-probe: p1");
    const secure = await get(judge.httpsUrl, { ca: judge.caPem });
    expect(secure.status).toBe(200);
    expect(secure.body).toContain("REMOTE_ADDR = 127.0.0.1");
    await expect(get(judge.httpsUrl)).rejects.toThrow();
    const redirect = await get(`http://${judge.host}:${judge.httpPort}/redirect?to=http://10.0.0.1/x`);
    expect(redirect.status).toBe(302);
  });

  it("tinyproxy modes and Basic auth", async () => {
    const elite = await startTinyproxy({ mode: "elite" });
    const anonymous = await startTinyproxy({ mode: "anonymous" });
    const transparent = await startTinyproxy({ mode: "transparent" });
    const authed = await startTinyproxy({ basicAuth: { username: "alice", password: "s3cret" } });
    try {
      const e = await viaHttpProxy(elite, judge.httpUrl);
      expect(e.body).toContain("REMOTE_ADDR = 127.0.0.2");
      expect(e.body.toLowerCase()).not.toContain("via:");
      expect((await viaHttpProxy(anonymous, judge.httpUrl)).body.toLowerCase()).toContain("via:");
      expect((await viaHttpProxy(transparent, judge.httpUrl)).body.toLowerCase()).toContain("x-tinyproxy: 127.0.0.1");
      expect((await viaHttpProxy(authed, judge.httpUrl)).status).toBe(407);
      expect((await viaHttpProxy(authed, judge.httpUrl, "alice:s3cret")).status).toBe(200);
    } finally {
      await Promise.all([elite.stop(), anonymous.stop(), transparent.stop(), authed.stop()]);
    }
  });

  it("squid forwards with its egress address, Basic auth refuses without credentials", async () => {
    const squid = await startSquid();
    const authed = await startSquid({ basicAuth: { username: "alice", password: "s3cret" }, forwardedFor: "off" });
    try {
      const answer = await viaHttpProxy(squid, judge.httpUrl);
      expect(answer.status).toBe(200);
      expect(answer.body).toContain("REMOTE_ADDR = 127.0.0.3");
      expect(answer.body.toLowerCase()).toContain("x-forwarded-for: 127.0.0.1");
      expect((await viaHttpProxy(authed, judge.httpUrl)).status).toBe(407);
      const ok = await viaHttpProxy(authed, judge.httpUrl, "alice:s3cret");
      expect(ok.status).toBe(200);
      expect(ok.body.toLowerCase()).toContain("x-forwarded-for: unknown");
    } finally {
      await Promise.all([squid.stop(), authed.stop()]);
    }
  });

  it("dante and microsocks accept connections; stop() ends the whole process group", async () => {
    const dante = await startDante();
    const danteAuth = await startDante({ auth: true });
    const micro = await startMicrosocks({ auth: { username: "alice", password: "s3cret" } });
    expect(danteAuth.credentials?.username).toMatch(/^roost/);
    for (const peer of [dante, danteAuth, micro]) {
      await new Promise<void>((resolve, reject) => net.connect(peer.port, peer.host, resolve).on("error", reject).unref());
    }
    const owners = execFileSync("ps", ["-eo", "pgid=,args="], { encoding: "utf8" })
      .split("\n")
      .filter((line) => line.includes("danted"))
      .map((line) => Number(line.trim().split(/\s+/)[0]));
    expect(owners.length).toBeGreaterThan(1);
    await Promise.all([dante.stop(), danteAuth.stop(), micro.stop()]);
    for (const pgid of new Set(owners)) await waitFor(() => groupMembers(pgid).length === 0, { timeoutMs: 5000, what: `process group ${pgid} to end` });
    expect(execFileSync("getent", ["passwd"], { encoding: "utf8" })).not.toContain(`${danteAuth.credentials?.username}:`);
  });

  it("tarpit accepts and stays silent; a closed port refuses", async () => {
    const tarpit = await startTarpit();
    try {
      const socket = net.connect(tarpit.port, tarpit.host);
      await new Promise((resolve) => socket.once("connect", resolve));
      socket.write("hello");
      await waitFor(() => tarpit.bytesReceived() === 5, { timeoutMs: 5000, what: "the tarpit to read 5 bytes" });
      expect(tarpit.accepted()).toBe(1);
      socket.destroy();
    } finally {
      await tarpit.stop();
    }
    const port = await closedPort();
    await expect(new Promise((resolve, reject) => net.connect(port, "127.0.0.1", () => resolve(true)).once("error", reject))).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });
});


describe("nginx list server", () => {
  (peerBinariesAvailable("nginx") ? it : it.skip)("counts a slow answer in flight until it ends, without logging the count", async () => {
    const lists = await startNginxListServer({ host: "127.0.0.16" });
    try {
      await lists.put("list.txt", "8.8.8.8:80\n");
      expect(await lists.inFlight()).toBe(0);
      const answer = get(`${lists.origin}/slow/list.txt`);
      await waitFor(async () => (await lists.inFlight()) === 1, { timeoutMs: 5000, what: "the slow answer in flight" });
      expect(await answer).toEqual({ status: 200, body: "8.8.8.8:80\n" });
      await waitFor(async () => (await lists.inFlight()) === 0, { timeoutMs: 5000, what: "the slow answer to end" });
      expect((await lists.requests()).map((r) => r.path)).toEqual(["/slow/list.txt"]);
    } finally {
      await lists.stop();
    }
  });
});
