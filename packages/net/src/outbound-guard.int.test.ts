import { createHook } from "node:async_hooks";
import http from "node:http";
import net from "node:net";

import { peerBinariesAvailable, startNginxJudge, startTarpit, type NginxJudge, type Tarpit } from "@roost/testkit";

import {
  BadRedirectError,
  DeadlineExceededError,
  guardedConnect,
  guardedGet,
  OutboundBlockedError,
  OutboundGuard,
  requestThroughProxy,
  ResponseTooLargeError,
  TooManyRedirectsError,
  type ResolveAll,
} from "./index.js";

/** An HTTP server that counts every TCP connection it accepts and every request it reads. */
async function countingServer(host: string, handler: http.RequestListener = (_req, res) => res.end("ok")) {
  const server = http.createServer(handler);
  let connections = 0;
  const requests: http.IncomingMessage[] = [];
  server.on("connection", () => connections++);
  server.on("request", (req: http.IncomingMessage) => requests.push(req));
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, host, resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => connections,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Counts outgoing TCP connect attempts in this process: proof that a refusal came before any socket. */
function connectAttempts() {
  let count = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === "TCPCONNECTWRAP") count++;
    },
  }).enable();
  return { count: () => count, stop: () => hook.disable() };
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => new Error("expected a rejection"),
    (error: unknown) => error,
  );
}

const LOOPBACK_FORMS = ["127.0.0.1", "0x7f000001", "2130706433", "017700000001", "127.1", "0177.0.0.1", "localhost", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]"];
const PRIVATE_FORMS = [
  "10.0.0.1",
  "172.16.0.1",
  "192.168.1.1",
  "100.64.0.1",
  "169.254.169.254",
  "0xa9fea9fe",
  "169.254.1.1",
  "224.0.0.1",
  "0.0.0.0",
  "[::]",
  "[fd00:ec2::254]",
  "[fc00::1]",
  "[fe80::1]",
  "[64:ff9b::a9fe:a9fe]",
  "[64:ff9b::a00:1]",
  "[2002:a9fe:a9fe::1]",
  "[::ffff:10.0.0.1]",
];

describe("outbound guard at dial time (guard on)", () => {
  const guard = new OutboundGuard();
  let v4: Awaited<ReturnType<typeof countingServer>>;
  let v6: Awaited<ReturnType<typeof countingServer>>;

  beforeAll(async () => {
    v4 = await countingServer("127.0.0.1");
    v6 = await countingServer("::1");
  });
  afterAll(async () => {
    await Promise.all([v4.close(), v6.close()]);
  });

  it.each(LOOPBACK_FORMS)("judge, IP lookup, plain connect and proxy at %s never reach the loopback server", async (form) => {
    const before = v4.connections();
    const url = `http://${form}:${v4.port}/judge`;
    for (const attempt of [
      () => guardedGet(guard, url, { timeoutMs: 2000, maxBytes: 1024 }),
      () => guardedConnect(guard, { host: form.replace(/^\[|\]$/g, ""), port: v4.port, timeoutMs: 2000 }),
      () => requestThroughProxy({ proxy: { protocol: "http", host: form, port: v4.port }, url: "http://example.com/", guard, deadlineMs: 2000 }),
    ]) {
      const error = await caught(attempt());
      expect(error).toBeInstanceOf(OutboundBlockedError);
      expect(error).toMatchObject({ reason: "loopback", address: expect.stringMatching(/^(127\.0\.0\.1|::ffff:7f00:1)$/) });
    }
    expect(v4.connections()).toBe(before);
  });

  it("IPv6 loopback [::1] never reaches the server listening there", async () => {
    const error = await caught(guardedGet(guard, `http://[::1]:${v6.port}/`, { timeoutMs: 2000, maxBytes: 1024 }));
    expect(error).toMatchObject({ code: "OUTBOUND_BLOCKED", reason: "loopback", address: "::1" });
    await expect(guardedConnect(guard, { host: "::1", port: v6.port, timeoutMs: 2000 })).rejects.toBeInstanceOf(OutboundBlockedError);
    expect(v6.connections()).toBe(0);
  });

  it("control: with ALLOW_PRIVATE_NETWORK_TARGETS the same forms do arrive", async () => {
    const openGuard = new OutboundGuard({ allowPrivateNetworkTargets: true });
    const before = v4.connections();
    const answer = await guardedGet(openGuard, `http://0x7f000001:${v4.port}/`, { timeoutMs: 2000, maxBytes: 1024 });
    expect(answer.body.toString()).toBe("ok");
    await guardedGet(openGuard, `http://[::1]:${v6.port}/`, { timeoutMs: 2000, maxBytes: 1024 });
    expect(v4.connections()).toBe(before + 1);
    expect(v6.connections()).toBe(1);
  });

  it.each(PRIVATE_FORMS)("%s is refused before any socket is opened", async (form) => {
    const attempts = connectAttempts();
    try {
      await expect(guardedGet(guard, `http://${form}/latest/meta-data/`, { timeoutMs: 2000, maxBytes: 1024 })).rejects.toBeInstanceOf(OutboundBlockedError);
      await expect(guardedConnect(guard, { host: form.replace(/^\[|\]$/g, ""), port: 80, timeoutMs: 2000 })).rejects.toBeInstanceOf(OutboundBlockedError);
      await expect(requestThroughProxy({ proxy: { protocol: "socks5", host: form, port: 1080 }, url: "http://example.com/", guard, deadlineMs: 2000 })).rejects.toBeInstanceOf(
        OutboundBlockedError,
      );
    } finally {
      attempts.stop();
    }
    expect(attempts.count()).toBe(0);
  });

  it("a name that resolves to metadata or private addresses is refused before any socket", async () => {
    const resolveAll: ResolveAll = async (name) => (name === "metadata.test" ? [{ address: "169.254.169.254", family: 4 }] : [{ address: "8.8.8.8", family: 4 }, { address: "fd00::5", family: 6 }]);
    const named = new OutboundGuard({ resolveAll });
    const attempts = connectAttempts();
    try {
      await expect(guardedGet(named, "http://metadata.test/", { timeoutMs: 2000, maxBytes: 1024 })).rejects.toMatchObject({ reason: "metadata", host: "metadata.test" });
      await expect(guardedGet(named, "https://mixed.test/", { timeoutMs: 2000, maxBytes: 1024 })).rejects.toMatchObject({ reason: "unique-local", address: "fd00::5" });
    } finally {
      attempts.stop();
    }
    expect(attempts.count()).toBe(0);
  });
});

describe("guarded GET: redirects, pinning, limits", () => {
  // The "allowed" server lives on 127.0.0.9; the test predicate lets exactly that address through.
  const ALLOWED = "127.0.0.9";
  const guard = new OutboundGuard({ allowAddress: ({ address }) => address === ALLOWED });
  let allowed: Awaited<ReturnType<typeof countingServer>>;
  let target: Awaited<ReturnType<typeof countingServer>>;
  let tarpit: Tarpit;

  beforeAll(async () => {
    target = await countingServer("127.0.0.1");
    allowed = await countingServer(ALLOWED, (req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname === "/to") return res.writeHead(302, { location: url.searchParams.get("url") ?? "" }).end();
      if (url.pathname === "/loop") return res.writeHead(301, { location: "/loop" }).end();
      if (url.pathname === "/big") return res.end(Buffer.alloc(5000, 97));
      if (url.pathname === "/big-chunked") {
        res.write(Buffer.alloc(3000, 97));
        return res.end(Buffer.alloc(3000, 97));
      }
      res.end(`host=${req.headers.host}`);
    });
    tarpit = await startTarpit(ALLOWED);
  });
  afterAll(async () => {
    await Promise.all([allowed.close(), target.close(), tarpit.stop()]);
  });

  const to = (url: string) => `http://${ALLOWED}:${allowed.port}/to?url=${encodeURIComponent(url)}`;

  it.each([
    ["loopback", () => `http://127.0.0.1:${target.port}/`],
    ["loopback by name", () => `http://localhost:${target.port}/`],
    ["loopback in hex", () => `http://0x7f000001:${target.port}/`],
    ["private", () => "http://10.0.0.1/"],
    ["metadata", () => "http://169.254.169.254/latest/meta-data/"],
    ["IPv6 metadata", () => "http://[fd00:ec2::254]/"],
  ])("a redirect from an allowed URL to %s is refused", async (_what, location) => {
    const requestsBefore = allowed.requests.length;
    const attempts = connectAttempts();
    let error: unknown;
    try {
      error = await caught(guardedGet(guard, to(location()), { timeoutMs: 2000, maxBytes: 1024 }));
    } finally {
      attempts.stop();
    }
    expect(error).toBeInstanceOf(OutboundBlockedError);
    expect(allowed.requests.length).toBe(requestsBefore + 1);
    expect(attempts.count()).toBe(1);
    expect(target.connections()).toBe(0);
  });

  it("follows allowed redirects and reports them", async () => {
    const okUrl = `http://${ALLOWED}:${allowed.port}/ok`;
    const answer = await guardedGet(guard, to(okUrl), { timeoutMs: 2000, maxBytes: 1024 });
    expect(answer).toMatchObject({ status: 200, url: okUrl, redirects: [okUrl] });
  });

  it("keeps credential headers on the same origin and drops them on another", async () => {
    const other = await countingServer(ALLOWED);
    try {
      const headers = { authorization: "Basic c2VjcmV0", cookie: "session=1", "x-keep": "yes" };
      await guardedGet(guard, to(`http://${ALLOWED}:${allowed.port}/ok`), { timeoutMs: 2000, maxBytes: 1024, headers });
      expect(allowed.requests.at(-1)?.headers).toMatchObject({ authorization: "Basic c2VjcmV0", cookie: "session=1", "x-keep": "yes" });
      await guardedGet(guard, to(`http://${ALLOWED}:${other.port}/`), { timeoutMs: 2000, maxBytes: 1024, headers });
      expect(other.requests).toHaveLength(1);
      expect(other.requests[0]?.headers["x-keep"]).toBe("yes");
      expect(other.requests[0]?.headers.authorization).toBeUndefined();
      expect(other.requests[0]?.headers.cookie).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it("refuses a first URL that is not http(s)", async () => {
    await expect(guardedGet(guard, "ftp://example.com/", { timeoutMs: 2000, maxBytes: 1024 })).rejects.toBeInstanceOf(TypeError);
  });

  it("stops after maxRedirects", async () => {
    await expect(guardedGet(guard, `http://${ALLOWED}:${allowed.port}/loop`, { timeoutMs: 2000, maxBytes: 1024, maxRedirects: 3 })).rejects.toBeInstanceOf(TooManyRedirectsError);
  });

  it("refuses a redirect to another scheme", async () => {
    await expect(guardedGet(guard, to("file:///etc/passwd"), { timeoutMs: 2000, maxBytes: 1024 })).rejects.toBeInstanceOf(BadRedirectError);
  });

  it("connects to the checked address only: one lookup per hop, none by Node (DNS rebinding)", async () => {
    let lookups = 0;
    // The first answer is the allowed address; any later lookup would rebind to the loopback target.
    const rebinding: ResolveAll = async () => [{ address: lookups++ === 0 ? ALLOWED : "127.0.0.1", family: 4 }];
    const pinned = new OutboundGuard({ resolveAll: rebinding, allowAddress: ({ address }) => address === ALLOWED });
    const answer = await guardedGet(pinned, `http://judge.test:${allowed.port}/ok`, { timeoutMs: 2000, maxBytes: 1024 });
    expect(answer.body.toString()).toBe(`host=judge.test:${allowed.port}`);
    expect(lookups).toBe(1);
    expect(target.connections()).toBe(0);
  });

  it("caps the body, declared or chunked", async () => {
    await expect(guardedGet(guard, `http://${ALLOWED}:${allowed.port}/big`, { timeoutMs: 2000, maxBytes: 4096 })).rejects.toBeInstanceOf(ResponseTooLargeError);
    await expect(guardedGet(guard, `http://${ALLOWED}:${allowed.port}/big-chunked`, { timeoutMs: 2000, maxBytes: 4096 })).rejects.toBeInstanceOf(ResponseTooLargeError);
    expect((await guardedGet(guard, `http://${ALLOWED}:${allowed.port}/big`, { timeoutMs: 2000, maxBytes: 5000 })).body.length).toBe(5000);
  });

  it("one timeout covers connect, headers and body", async () => {
    const startedAt = performance.now();
    const error = await caught(guardedGet(guard, `http://${ALLOWED}:${tarpit.port}/`, { timeoutMs: 300, maxBytes: 1024 }));
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(performance.now() - startedAt).toBeLessThan(300 + 250);
  });
});

const describeTls = peerBinariesAvailable("nginx", "openssl") ? describe : describe.skip;

describeTls("guarded TLS keeps the host name for SNI and verification", () => {
  let judge: NginxJudge;
  beforeAll(async () => {
    judge = await startNginxJudge();
  });
  afterAll(async () => {
    await judge?.stop();
  });

  it("https://localhost pinned to the judge's address verifies against the name", async () => {
    const resolveAll: ResolveAll = async () => [{ address: judge.host, family: 4 }];
    const pinned = new OutboundGuard({ resolveAll, allowAddress: ({ address }) => address === judge.host });
    const answer = await guardedGet(pinned, `https://localhost:${judge.httpsPort}/judge`, { timeoutMs: 3000, maxBytes: 65536, tls: { ca: judge.caPem } });
    expect(answer.status).toBe(200);
    expect(answer.body.toString()).toContain("REMOTE_ADDR = 127.0.0.1");
    const socket = await guardedConnect(pinned, { host: "localhost", port: judge.httpsPort, timeoutMs: 3000, tls: { ca: judge.caPem } });
    expect((socket as import("node:tls").TLSSocket).authorized).toBe(true);
    socket.destroy();
    // A name the certificate does not carry fails verification although the address is the same.
    const wrongName: ResolveAll = async () => [{ address: judge.host, family: 4 }];
    const other = new OutboundGuard({ resolveAll: wrongName, allowAddress: ({ address }) => address === judge.host });
    await expect(guardedGet(other, `https://judge.invalid:${judge.httpsPort}/judge`, { timeoutMs: 3000, maxBytes: 65536, tls: { ca: judge.caPem } })).rejects.toThrow(/altnames|Hostname/i);
  });
});
