import net from "node:net";

import {
  closedPort,
  peerBinariesAvailable,
  startDante,
  startMicrosocks,
  startNginxJudge,
  startSquid,
  startTarpit,
  startTinyproxy,
  waitFor,
  type NginxJudge,
  type ProxyPeer,
  type Tarpit,
} from "@roost/testkit";

import { DeadlineExceededError, dialThroughProxy, OutboundBlockedError, OutboundGuard, ProxyError, requestThroughProxy, type ProxyEndpoint } from "./index.js";

const available = peerBinariesAvailable("tinyproxy", "squid", "danted", "microsocks", "nginx", "openssl");
const describePeers = available ? describe : describe.skip;

// The peers live on loopback, so these tests open the guard as ALLOW_PRIVATE_NETWORK_TARGETS would.
const open = new OutboundGuard({ allowPrivateNetworkTargets: true });

function endpoint(peer: ProxyPeer, overrides: Partial<ProxyEndpoint> = {}): ProxyEndpoint {
  return {
    protocol: peer.protocol,
    host: peer.host,
    port: peer.port,
    ...(peer.credentials ? { username: peer.credentials.username, password: peer.credentials.password } : {}),
    ...overrides,
  };
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => new Error("expected a rejection"),
    (error: unknown) => error,
  );
}

describePeers("proxy dialers against real peers", () => {
  let judge: NginxJudge;
  const peers: { stop(): Promise<void> }[] = [];
  let tinyproxy: ProxyPeer;
  let tinyproxyAuth: ProxyPeer;
  let squid: ProxyPeer;
  let squidAuth: ProxyPeer;
  let dante: ProxyPeer;
  let danteAuth: ProxyPeer;
  let microsocks: ProxyPeer;
  let microsocksAuth: ProxyPeer;
  let tarpit: Tarpit;

  beforeAll(async () => {
    const credentials = { username: "alice", password: "s3cret" };
    [judge, tinyproxy, tinyproxyAuth, squid, squidAuth, dante, danteAuth, microsocks, microsocksAuth, tarpit] = await Promise.all([
      startNginxJudge(),
      startTinyproxy(),
      startTinyproxy({ basicAuth: credentials }),
      startSquid(),
      startSquid({ basicAuth: credentials }),
      startDante(),
      startDante({ auth: true }),
      startMicrosocks(),
      startMicrosocks({ auth: credentials }),
      startTarpit(),
    ]);
    peers.push(judge, tinyproxy, tinyproxyAuth, squid, squidAuth, dante, danteAuth, microsocks, microsocksAuth, tarpit);
  });

  afterAll(async () => {
    await Promise.all(peers.map((peer) => peer.stop()));
  });

  const get = (proxy: ProxyEndpoint, url: string, deadlineMs = 5000) =>
    requestThroughProxy({ proxy, url, guard: open, deadlineMs, tls: { ca: judge.caPem }, headers: { "user-agent": "roost-test" } });

  describe("HTTP proxies", () => {
    it("tinyproxy: absolute-form GET reaches the judge from the proxy's egress address", async () => {
      const answer = await get(endpoint(tinyproxy), judge.httpUrl);
      expect(answer.status).toBe(200);
      expect(answer.body.toString()).toContain("REMOTE_ADDR = 127.0.0.2");
      expect(answer.body.toString()).toMatch(/^GET \/judge HTTP\/1\.1/m);
      expect(answer.truncated).toBe(false);
      expect(answer.elapsedMs).toBeGreaterThan(0);
    });

    it("tinyproxy: CONNECT, then TLS with SNI to the https judge", async () => {
      const answer = await get(endpoint(tinyproxy), judge.httpsUrl);
      expect(answer.status).toBe(200);
      expect(answer.body.toString()).toContain("REMOTE_ADDR = 127.0.0.2");
    });

    it("a judge certificate the client does not trust fails the TLS step, not the proxy", async () => {
      const error = await caught(requestThroughProxy({ proxy: endpoint(tinyproxy), url: judge.httpsUrl, guard: open, deadlineMs: 5000 }));
      expect(error).not.toBeInstanceOf(ProxyError);
      expect(error).toMatchObject({ code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" });
    });

    it("tinyproxy with Basic auth: credentials pass for both forms, missing or wrong ones are a typed auth failure", async () => {
      expect((await get(endpoint(tinyproxyAuth), judge.httpUrl)).status).toBe(200);
      expect((await get(endpoint(tinyproxyAuth), judge.httpsUrl)).status).toBe(200);
      const anonymous = { protocol: "http" as const, host: tinyproxyAuth.host, port: tinyproxyAuth.port };
      for (const url of [judge.httpUrl, judge.httpsUrl]) {
        const error = await caught(get(anonymous, url));
        expect(error).toBeInstanceOf(ProxyError);
        expect(error).toMatchObject({ code: "PROXY_AUTH_FAILED", statusCode: 407 });
      }
      // tinyproxy answers a wrong password with 401: typed for CONNECT, an answer (not the judge's) in absolute form.
      await expect(get(endpoint(tinyproxyAuth, { password: "wrong" }), judge.httpsUrl)).rejects.toMatchObject({ code: "PROXY_AUTH_FAILED", statusCode: 401 });
      const refused = await get(endpoint(tinyproxyAuth, { password: "wrong" }), judge.httpUrl);
      expect(refused.status).toBe(401);
      expect(refused.body.toString()).not.toContain("REMOTE_ADDR");
    });

    it("squid: absolute-form and CONNECT, Basic auth", async () => {
      const plain = await get(endpoint(squid), judge.httpUrl);
      expect(plain.body.toString()).toContain("REMOTE_ADDR = 127.0.0.3");
      expect(plain.body.toString().toLowerCase()).toContain("x-forwarded-for: 127.0.0.1");
      expect((await get(endpoint(squid), judge.httpsUrl)).body.toString()).toContain("REMOTE_ADDR = 127.0.0.3");
      expect((await get(endpoint(squidAuth), judge.httpUrl)).status).toBe(200);
      expect((await get(endpoint(squidAuth), judge.httpsUrl)).status).toBe(200);
      for (const url of [judge.httpUrl, judge.httpsUrl]) {
        const error = await caught(get(endpoint(squidAuth, { password: "wrong" }), url));
        expect(error).toBeInstanceOf(ProxyError);
        expect(error).toMatchObject({ code: "PROXY_AUTH_FAILED", statusCode: 407 });
      }
    });

    it("a CONNECT the proxy refuses is a typed error with its status", async () => {
      const port = await closedPort(judge.host);
      const error = await caught(dialThroughProxy({ proxy: endpoint(tinyproxy), target: { host: judge.host, port }, deadlineMs: 5000, guard: open }));
      expect(error).toBeInstanceOf(ProxyError);
      expect(error).toMatchObject({ code: "PROXY_REFUSED" });
      expect((error as ProxyError).statusCode).toBeGreaterThanOrEqual(400);
    });
  });

  describe("SOCKS proxies", () => {
    it("dante: SOCKS4 and SOCKS5 to the http and https judge", async () => {
      for (const protocol of ["socks4", "socks5"] as const) {
        for (const url of [judge.httpUrl, judge.httpsUrl]) {
          const answer = await get(endpoint(dante, { protocol }), url);
          expect(answer.status).toBe(200);
          expect(answer.body.toString()).toContain("REMOTE_ADDR = 127.0.0.4");
        }
      }
    });

    it("dante: SOCKS4 sends a user id", async () => {
      expect((await get(endpoint(dante, { protocol: "socks4", username: "someone" }), judge.httpUrl)).status).toBe(200);
    });

    it("dante with username auth: RFC 1929 passes, a wrong password or none is a typed auth failure", async () => {
      expect((await get(endpoint(danteAuth), judge.httpUrl)).body.toString()).toContain("REMOTE_ADDR = 127.0.0.4");
      await expect(get(endpoint(danteAuth, { password: "wrong" }), judge.httpUrl)).rejects.toMatchObject({ code: "PROXY_AUTH_FAILED" });
      await expect(get({ protocol: "socks5", host: danteAuth.host, port: danteAuth.port }, judge.httpUrl)).rejects.toMatchObject({ code: "PROXY_AUTH_FAILED" });
    });

    it("microsocks: SOCKS5 with and without auth", async () => {
      expect((await get(endpoint(microsocks), judge.httpsUrl)).body.toString()).toContain("REMOTE_ADDR = 127.0.0.5");
      expect((await get(endpoint(microsocksAuth), judge.httpUrl)).body.toString()).toContain("REMOTE_ADDR = 127.0.0.5");
      await expect(get(endpoint(microsocksAuth, { password: "wrong" }), judge.httpUrl)).rejects.toMatchObject({ code: "PROXY_AUTH_FAILED" });
      await expect(get({ protocol: "socks5", host: microsocksAuth.host, port: microsocksAuth.port }, judge.httpUrl)).rejects.toBeInstanceOf(ProxyError);
    });

    it("a target name goes to the proxy unresolved (SOCKS4a, SOCKS5 and CONNECT resolve it themselves)", async () => {
      const server = net.createServer((socket) => socket.end("hello from 127.0.0.1\n"));
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const { port } = server.address() as net.AddressInfo;
      // This guard can only resolve the proxies' literals: any lookup of the target name would fail the dial.
      const noLookups = new OutboundGuard({ allowPrivateNetworkTargets: true, resolveAll: () => Promise.reject(new Error("Roost resolved a target name")) });
      try {
        for (const proxy of [endpoint(microsocks), endpoint(dante, { protocol: "socks5" }), endpoint(tinyproxy)]) {
          const socket = await dialThroughProxy({ proxy, target: { host: "localhost", port }, deadlineMs: 5000, guard: noLookups });
          const text = await new Promise<string>((resolve, reject) => {
            let received = "";
            socket.setEncoding("utf8");
            socket.on("data", (chunk: string) => (received += chunk));
            socket.once("end", () => resolve(received));
            socket.once("error", reject);
          });
          expect(text).toBe("hello from 127.0.0.1\n");
        }
      } finally {
        server.close();
      }
    });

    it("dialThroughProxy hands back a raw tunnel the caller can speak through", async () => {
      const socket = await dialThroughProxy({ proxy: endpoint(microsocks), target: { host: judge.host, port: judge.httpPort }, deadlineMs: 5000, guard: open });
      const answer = await new Promise<string>((resolve, reject) => {
        let text = "";
        socket.setEncoding("utf8");
        socket.on("data", (chunk: string) => (text += chunk));
        socket.once("end", () => resolve(text));
        socket.once("error", reject);
        socket.write(`GET /judge HTTP/1.1\r\nHost: ${judge.host}\r\nConnection: close\r\n\r\n`);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 200/);
      expect(answer).toContain("REMOTE_ADDR = 127.0.0.5");
    });
  });

  describe("dead proxies", () => {
    it.each(["http", "socks4", "socks5"] as const)("%s: a closed port fails fast as unreachable", async (protocol) => {
      const port = await closedPort();
      const startedAt = performance.now();
      const error = await caught(get({ protocol, host: "127.0.0.1", port }, judge.httpUrl, 5000));
      expect(error).toBeInstanceOf(ProxyError);
      expect(error).toMatchObject({ code: "PROXY_UNREACHABLE" });
      expect(performance.now() - startedAt).toBeLessThan(1000);
    });

    it.each([
      ["http", "absolute-form"],
      ["http", "CONNECT"],
      ["socks4", "tunnel"],
      ["socks5", "tunnel"],
    ] as const)("%s (%s): a tarpit is cut at the deadline and the socket is closed", async (protocol, form) => {
      const deadlineMs = 300;
      const acceptedBefore = tarpit.accepted();
      const url = form === "CONNECT" ? judge.httpsUrl : judge.httpUrl;
      const startedAt = performance.now();
      const error = await caught(get({ protocol, host: tarpit.host, port: tarpit.port }, url, deadlineMs));
      const elapsed = performance.now() - startedAt;
      expect(error).toBeInstanceOf(DeadlineExceededError);
      expect(error).toMatchObject({ code: "DEADLINE_EXCEEDED", deadlineMs });
      expect(elapsed).toBeGreaterThanOrEqual(deadlineMs - 5);
      expect(elapsed).toBeLessThan(deadlineMs + 250);
      expect(tarpit.accepted()).toBe(acceptedBefore + 1);
      await waitFor(() => tarpit.openConnections() === 0, { timeoutMs: 2000, what: "the dialer to close its tarpit socket" });
    });

    it("the deadline also covers the answer: a judge that stalls after its head is cut", async () => {
      const stall = net.createServer((socket) => {
        socket.once("data", () => socket.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial"));
        socket.on("error", () => undefined);
      });
      await new Promise<void>((resolve) => stall.listen(0, "127.0.0.9", resolve));
      const { port } = stall.address() as net.AddressInfo;
      try {
        const startedAt = performance.now();
        const error = await caught(get(endpoint(tinyproxy), `http://127.0.0.9:${port}/`, 400));
        expect(error).toBeInstanceOf(DeadlineExceededError);
        expect(performance.now() - startedAt).toBeLessThan(400 + 250);
      } finally {
        stall.close();
      }
    });

    it("keeps only maxBodyBytes of a long answer", async () => {
      const answer = await requestThroughProxy({ proxy: endpoint(tinyproxy), url: judge.httpUrl, guard: open, deadlineMs: 5000, maxBodyBytes: 40 });
      expect(answer.body.length).toBe(40);
      expect(answer.truncated).toBe(true);
    });

    it("the caller's signal aborts a dial", async () => {
      const controller = new AbortController();
      const aborted = caught(
        requestThroughProxy({ proxy: { protocol: "socks5", host: tarpit.host, port: tarpit.port }, url: judge.httpUrl, guard: open, deadlineMs: 5000, signal: controller.signal }),
      );
      controller.abort(new Error("stopped by caller"));
      expect(await aborted).toMatchObject({ message: "stopped by caller" });
    });
  });

  describe("with the guard on", () => {
    it("refuses a proxy on loopback before connecting to it", async () => {
      const guard = new OutboundGuard();
      const acceptedBefore = tarpit.accepted();
      for (const host of ["127.0.0.1", "0x7f000001", "localhost", "::ffff:127.0.0.1"]) {
        const error = await caught(dialThroughProxy({ proxy: { protocol: "socks5", host, port: tarpit.port }, target: { host: "example.com", port: 80 }, deadlineMs: 2000, guard }));
        expect(error).toBeInstanceOf(OutboundBlockedError);
        expect(error).toMatchObject({ reason: "loopback" });
      }
      expect(tarpit.accepted()).toBe(acceptedBefore);
    });

    it("refuses a target literal in a reserved range, even through an allowed proxy", async () => {
      const guard = new OutboundGuard({ allowAddress: ({ address }) => address === "127.0.0.1" });
      await expect(dialThroughProxy({ proxy: endpoint(microsocks), target: { host: "169.254.169.254", port: 80 }, deadlineMs: 2000, guard })).rejects.toMatchObject({
        code: "OUTBOUND_BLOCKED",
        reason: "metadata",
      });
    });
  });
});
