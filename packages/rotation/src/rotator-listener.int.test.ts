import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { OutboundGuard } from "@roost/net";
import {
  closedPort,
  freePort,
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
} from "@roost/testkit";

import { loadTlsCertificate, type TlsMaterial } from "./listeners/tls-certificate.js";
import { hashRotatorPassword } from "./rotator-password.js";
import { RotatorListener, type RotatorObserver } from "./rotator-listener.js";
import type { RotatorDefinition } from "./rotator-repository.js";
import type { Upstream } from "./upstream-pool.js";

const available = peerBinariesAvailable("tinyproxy", "squid", "danted", "microsocks", "nginx", "openssl", "curl");
const describePeers = available ? describe : describe.skip;

// Peers and the origin live on loopback, as ALLOW_PRIVATE_NETWORK_TARGETS=true allows.
const guard = new OutboundGuard({ allowPrivateNetworkTargets: true });
const SERVER_KEY = "test-server-key";
const CLIENT = { username: "alice", password: "rotator-pass" };

interface CurlResult {
  exitCode: number;
  status: number;
  body: string;
}

/** curl with the given proxy arguments; the status line comes last from -w. */
function curl(args: readonly string[]): Promise<CurlResult> {
  return new Promise((resolve) => {
    execFile("curl", ["-s", "--max-time", "10", "-w", "\n%{http_code}", ...args], (error, stdout) => {
      const cut = stdout.lastIndexOf("\n");
      resolve({ exitCode: error && typeof error.code === "number" ? error.code : 0, status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) });
    });
  });
}

const egressOf = (result: CurlResult): string | undefined => /REMOTE_ADDR = (\S+)/.exec(result.body)?.[1];

describePeers("rotator listeners with real clients and upstreams", () => {
  let origin: NginxJudge;
  let tinyA: ProxyPeer;
  let tinyB: ProxyPeer;
  let tinyAuth: ProxyPeer;
  let microsocks: ProxyPeer;
  let danteAuth: ProxyPeer;
  let tls: TlsMaterial;
  let dataDir: string;
  const peers: { stop(): Promise<void> }[] = [];
  const listeners: RotatorListener[] = [];
  let nextId = 1;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "roost-rotator-"));
    [origin, tinyA, tinyB, tinyAuth, microsocks, danteAuth, tls] = await Promise.all([
      startNginxJudge(),
      startTinyproxy({ egressAddress: "127.0.0.2" }),
      startTinyproxy({ egressAddress: "127.0.0.3" }),
      startTinyproxy({ egressAddress: "127.0.0.6", basicAuth: { username: "up", password: "up-secret" } }),
      startMicrosocks(),
      startDante({ auth: true }),
      loadTlsCertificate({ dataDir }),
    ]);
    peers.push(origin, tinyA, tinyB, tinyAuth, microsocks, danteAuth);
  });

  afterAll(async () => {
    await Promise.all(listeners.map((listener) => listener.stop()));
    await Promise.all(peers.map((peer) => peer.stop()));
    await rm(dataDir, { recursive: true, force: true });
  });

  const upstreamOf = (peer: ProxyPeer, proxyId: number, country = "N/A"): Upstream => ({
    proxyId,
    ip: peer.host,
    port: peer.port,
    username: peer.credentials?.username ?? "",
    password: peer.credentials?.password ?? "",
    country,
  });

  async function open(
    fields: Pick<RotatorDefinition, "protocol" | "listenProtocol"> & {
      auth?: boolean;
      guard?: OutboundGuard;
      responseTimeoutMs?: number;
      tunnelIdleTimeoutMs?: number;
      bytesReportIntervalMs?: number;
      observer?: RotatorObserver;
    },
    upstreams: Upstream[],
  ): Promise<RotatorListener> {
    const definition: RotatorDefinition = {
      id: nextId++,
      userId: 1,
      name: `r${nextId}`,
      instanceId: "test",
      protocol: fields.protocol,
      listenProtocol: fields.listenProtocol,
      listenPort: await freePort(),
      authRequired: fields.auth ?? false,
      authUsername: fields.auth ? CLIENT.username : "",
      authPasswordHash: fields.auth ? hashRotatorPassword(SERVER_KEY, CLIENT.password) : "",
      reputationLabels: [],
      uptimeFilterType: null,
      uptimePercentage: null,
    };
    const listener = new RotatorListener({
      definition,
      host: "127.0.0.1",
      guard: fields.guard ?? guard,
      serverKey: SERVER_KEY,
      tls,
      upstreamTimeoutMs: 3000,
      ...(fields.responseTimeoutMs !== undefined ? { responseTimeoutMs: fields.responseTimeoutMs } : {}),
      ...(fields.tunnelIdleTimeoutMs !== undefined ? { tunnelIdleTimeoutMs: fields.tunnelIdleTimeoutMs } : {}),
      ...(fields.bytesReportIntervalMs !== undefined ? { bytesReportIntervalMs: fields.bytesReportIntervalMs } : {}),
      ...(fields.observer ? { observer: fields.observer } : {}),
    });
    listener.pool.replace(upstreams);
    await listener.start();
    listeners.push(listener);
    return listener;
  }

  const proxyUrl = (scheme: string, listener: RotatorListener, user?: string, password = "x"): string =>
    `${scheme}://${user === undefined ? "" : `${encodeURIComponent(user)}:${encodeURIComponent(password)}@`}127.0.0.1:${listener.port}`;

  it("http listener: absolute-form requests rotate over HTTP upstreams", async () => {
    const listener = await open({ protocol: "http", listenProtocol: "http" }, [upstreamOf(tinyA, 1), upstreamOf(tinyB, 2)]);
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await curl(["-x", proxyUrl("http", listener), origin.httpUrl]));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(results.map(egressOf)).toEqual(["127.0.0.2", "127.0.0.3", "127.0.0.2", "127.0.0.3"]);
  });

  it("http listener: CONNECT tunnels rotate too, and reach an https origin", async () => {
    const listener = await open({ protocol: "http", listenProtocol: "http" }, [upstreamOf(tinyA, 1), upstreamOf(tinyB, 2)]);
    const first = await curl(["-p", "-x", proxyUrl("http", listener), origin.httpUrl]);
    const second = await curl(["-p", "-x", proxyUrl("http", listener), origin.httpUrl]);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(new Set([egressOf(first), egressOf(second)])).toEqual(new Set(["127.0.0.2", "127.0.0.3"]));
    const secure = await curl(["--cacert", origin.caFile, "-x", proxyUrl("http", listener), origin.httpsUrl]);
    expect(secure.status).toBe(200);
  });

  it("keeps a sticky session on one upstream and targets a country", async () => {
    const listener = await open({ protocol: "http", listenProtocol: "http" }, [upstreamOf(tinyA, 1, "DE"), upstreamOf(tinyB, 2, "US")]);
    const sticky = [];
    for (let i = 0; i < 3; i++) sticky.push(egressOf(await curl(["-x", proxyUrl("http", listener, "session-k1"), origin.httpUrl])));
    expect(new Set(sticky).size).toBe(1);
    const us = [];
    for (let i = 0; i < 3; i++) us.push(egressOf(await curl(["-x", proxyUrl("http", listener, "country-us"), origin.httpUrl])));
    expect(us).toEqual(["127.0.0.3", "127.0.0.3", "127.0.0.3"]);
    const none = await curl(["-x", proxyUrl("http", listener, "country-fr"), origin.httpUrl]);
    expect(none.status).toBe(503);
  });

  it("answers 407 with Proxy-Authenticate without valid credentials, and forwards with the upstream's own", async () => {
    const listener = await open({ protocol: "http", listenProtocol: "http", auth: true }, [upstreamOf(tinyAuth, 3)]);
    const missing = await curl(["-i", "-x", proxyUrl("http", listener), origin.httpUrl]);
    expect(missing.status).toBe(407);
    expect(missing.body).toMatch(/^proxy-authenticate: Basic realm="roost"/im);
    expect((await curl(["-x", proxyUrl("http", listener, CLIENT.username, "wrong"), origin.httpUrl])).status).toBe(407);
    const tunnelRefused = await curl(["-p", "-x", proxyUrl("http", listener, CLIENT.username, "wrong"), origin.httpUrl]);
    expect(tunnelRefused.exitCode).not.toBe(0);
    const ok = await curl(["-x", proxyUrl("http", listener, `${CLIENT.username}-session-a`, CLIENT.password), origin.httpUrl]);
    expect(ok.status).toBe(200);
    expect(egressOf(ok)).toBe("127.0.0.6");
    expect(ok.body).not.toMatch(/proxy-authorization/i);
    const tunnel = await curl(["-p", "-x", proxyUrl("http", listener, CLIENT.username, CLIENT.password), origin.httpUrl]);
    expect(egressOf(tunnel)).toBe("127.0.0.6");
  });

  it("checks the credentials of every request on a kept-alive connection, options included", async () => {
    const listener = await open({ protocol: "http", listenProtocol: "http", auth: true }, [upstreamOf(tinyA, 1, "DE"), upstreamOf(tinyB, 2, "US")]);
    const socket = net.connect(listener.port, "127.0.0.1");
    let received = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
    // One whole response off the connection.
    const exchange = async (user: string, password: string): Promise<{ status: number; body: string }> => {
      const basic = Buffer.from(`${user}:${password}`).toString("base64");
      socket.write(`GET ${origin.httpUrl} HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Authorization: Basic ${basic}\r\n\r\n`);
      return waitFor(
        () => {
          const end = received.indexOf("\r\n\r\n");
          if (end === -1) return undefined;
          const head = received.subarray(0, end).toString("latin1");
          // The judge's echo module answers chunked: its body (chunk lines and all) ends at the last chunk.
          const chunked = /\r\ntransfer-encoding: *chunked/i.test(head);
          const last = received.indexOf("0\r\n\r\n", end + 4);
          const length = chunked ? (last === -1 ? Infinity : last + 5 - end - 4) : Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
          if (received.length < end + 4 + length) return undefined;
          const body = received.subarray(end + 4, end + 4 + length).toString("latin1");
          received = received.subarray(end + 4 + length);
          return { status: Number(head.slice(9, 12)), body };
        },
        { what: "a whole response" },
      );
    };
    try {
      const de = await exchange(`${CLIENT.username}-country-de`, CLIENT.password);
      expect([de.status, egressOf({ exitCode: 0, ...de })]).toEqual([200, "127.0.0.2"]);
      // The same connection, other options: they are read again.
      const us = await exchange(`${CLIENT.username}-country-us`, CLIENT.password);
      expect([us.status, egressOf({ exitCode: 0, ...us })]).toEqual([200, "127.0.0.3"]);
      // A wrong password after passing ones is refused all the same.
      expect((await exchange(`${CLIENT.username}-country-us`, "wrong")).status).toBe(407);
    } finally {
      socket.destroy();
    }
  });

  it("answers 502, never 407, when an upstream refuses its stored credentials", async () => {
    // squid answers bad proxy credentials with 407 (tinyproxy answers 401, like an origin would).
    const squid = await startSquid({ basicAuth: { username: "up", password: "up-secret" } });
    peers.push(squid);
    const wrong = { ...upstreamOf(squid, 7), password: "stale" };
    const listener = await open({ protocol: "http", listenProtocol: "http" }, [wrong]);
    expect((await curl(["-x", proxyUrl("http", listener), origin.httpUrl])).status).toBe(502);
    const tunnel = await curl(["-p", "-x", proxyUrl("http", listener), origin.httpUrl]);
    expect(tunnel.exitCode).not.toBe(0);
    expect(tunnel.status).not.toBe(407);
  });

  it("https listener: the same inside TLS", async () => {
    const listener = await open({ protocol: "http", listenProtocol: "https" }, [upstreamOf(tinyA, 1)]);
    const plain = await curl(["--proxy", proxyUrl("https", listener), "--proxy-insecure", origin.httpUrl]);
    expect(plain.status).toBe(200);
    expect(egressOf(plain)).toBe("127.0.0.2");
    const tunnel = await curl(["-p", "--proxy", proxyUrl("https", listener), "--proxy-insecure", origin.httpUrl]);
    expect(egressOf(tunnel)).toBe("127.0.0.2");
  });

  it("socks5 listener over SOCKS5 upstreams (microsocks, dante with auth), with RFC 1929 when required", async () => {
    const listener = await open({ protocol: "socks5", listenProtocol: "socks5", auth: true }, [upstreamOf(microsocks, 4), upstreamOf(danteAuth, 5)]);
    const egress = [];
    for (let i = 0; i < 2; i++) {
      const result = await curl(["--socks5-hostname", `${CLIENT.username}:${CLIENT.password}@127.0.0.1:${listener.port}`, origin.httpUrl]);
      expect(result.status).toBe(200);
      egress.push(egressOf(result));
    }
    expect(new Set(egress)).toEqual(new Set([microsocks.egressAddress, danteAuth.egressAddress]));
    const byAddress = await curl(["--socks5", `${CLIENT.username}:${CLIENT.password}@127.0.0.1:${listener.port}`, origin.httpUrl]);
    expect(byAddress.status).toBe(200);
    const refused = await curl(["--socks5-hostname", `${CLIENT.username}:wrong@127.0.0.1:${listener.port}`, origin.httpUrl]);
    expect(refused.exitCode).not.toBe(0);
    const anonymous = await curl(["--socks5-hostname", `127.0.0.1:${listener.port}`, origin.httpUrl]);
    expect(anonymous.exitCode).not.toBe(0);
  });

  it("socks5 listener: an IPv6 target reaches the upstream as IPv6", async () => {
    const listener = await open({ protocol: "socks5", listenProtocol: "socks5" }, [upstreamOf(microsocks, 4)]);
    const result = await curl(["--socks5", `127.0.0.1:${listener.port}`, `http://[::ffff:${origin.host}]:${origin.httpPort}/judge`]);
    // ATYP 4 from curl; microsocks dials the IPv4-mapped address (its -b bind is IPv4, so it cannot apply it here).
    expect(result.status).toBe(200);
    expect(egressOf(result)).toBeDefined();
  });

  it("socks4a and socks4 listeners over an HTTP upstream", async () => {
    const listener = await open({ protocol: "https", listenProtocol: "socks4" }, [upstreamOf(tinyB, 2)]);
    const named = await curl(["--socks4a", `127.0.0.1:${listener.port}`, origin.httpUrl]);
    expect(named.status).toBe(200);
    expect(egressOf(named)).toBe("127.0.0.3");
    const numeric = await curl(["--socks4", `127.0.0.1:${listener.port}`, origin.httpUrl]);
    expect(numeric.status).toBe(200);
  });

  it("socks4 listener with auth takes `<username>:<password>` as the user id", async () => {
    const listener = await open({ protocol: "http", listenProtocol: "socks4", auth: true }, [upstreamOf(tinyA, 1)]);
    const reply = async (userId: string): Promise<number | undefined> => {
      const socket = net.connect({ host: "127.0.0.1", port: listener.port });
      const answer: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => answer.push(chunk));
      socket.on("error", () => undefined);
      const port = Buffer.alloc(2);
      port.writeUInt16BE(origin.httpPort);
      // SOCKS4a: CONNECT, port, 0.0.0.1, user id NUL, host NUL.
      socket.write(Buffer.concat([Buffer.from([4, 1]), port, Buffer.from([0, 0, 0, 1]), Buffer.from(`${userId}\0${origin.host}\0`, "latin1")]));
      await waitFor(() => Buffer.concat(answer).length >= 8, { what: "a SOCKS4 reply" });
      socket.destroy();
      return Buffer.concat(answer)[1];
    };
    expect(await reply(`${CLIENT.username}-session-a:${CLIENT.password}`)).toBe(0x5a);
    expect(await reply(`${CLIENT.username}:wrong`)).toBe(0x5b);
    expect(await reply(CLIENT.username)).toBe(0x5b);
  });

  it("socks5 listener: reply codes for an empty pool, dead upstreams, a refused target and unsupported requests", async () => {
    /** REP of a no-auth SOCKS5 request: `command`, address type `atyp` with `address`, port. */
    const reply = async (port: number, command: number, atyp: number, address: Buffer, targetPort: number): Promise<number | undefined> => {
      const socket = net.connect({ host: "127.0.0.1", port });
      const answer: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => answer.push(chunk));
      socket.on("error", () => undefined);
      const portBytes = Buffer.alloc(2);
      portBytes.writeUInt16BE(targetPort);
      socket.write(Buffer.from([5, 1, 0]));
      socket.write(Buffer.concat([Buffer.from([5, command, 0, atyp]), address, portBytes]));
      // Method choice (2 bytes), then the reply's VER and REP.
      await waitFor(() => Buffer.concat(answer).length >= 4, { what: "a SOCKS5 reply" });
      socket.destroy();
      return Buffer.concat(answer)[3];
    };
    const ipv4 = (host: string): Buffer => Buffer.from(host.split(".").map(Number));
    const empty = await open({ protocol: "socks5", listenProtocol: "socks5" }, []);
    expect(await reply(empty.port, 1, 1, ipv4(origin.host), origin.httpPort)).toBe(1);
    const dead = await open({ protocol: "socks5", listenProtocol: "socks5" }, [{ proxyId: 70, ip: "127.0.0.1", port: await closedPort(), username: "", password: "", country: "N/A" }]);
    expect(await reply(dead.port, 1, 1, ipv4(origin.host), origin.httpPort)).toBe(1);
    const live = await open({ protocol: "socks5", listenProtocol: "socks5" }, [upstreamOf(microsocks, 4)]);
    expect(await reply(live.port, 1, 1, ipv4("127.0.0.1"), await closedPort())).toBe(4);
    expect(await reply(live.port, 2, 1, ipv4(origin.host), origin.httpPort)).toBe(7);
    expect(await reply(live.port, 1, 9, Buffer.alloc(0), origin.httpPort)).toBe(8);
    expect(live.pool.isBenched(4)).toBe(false);
  });

  it("fails over to the next upstream when one is down or killed", async () => {
    const victim = await startTinyproxy({ egressAddress: "127.0.0.7" });
    peers.push(victim);
    const deadPort = await closedPort();
    const dead: Upstream = { proxyId: 90, ip: "127.0.0.1", port: deadPort, username: "", password: "", country: "N/A" };
    const listener = await open({ protocol: "http", listenProtocol: "http" }, [dead, upstreamOf(victim, 91), upstreamOf(tinyA, 1)]);
    const before = [];
    for (let i = 0; i < 3; i++) before.push(await curl(["-x", proxyUrl("http", listener), origin.httpUrl]));
    expect(before.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(before.map(egressOf)).toContain("127.0.0.7");
    await victim.stop();
    for (let i = 0; i < 6; i++) {
      const plain = await curl(["-x", proxyUrl("http", listener), origin.httpUrl]);
      const tunnel = await curl(["-p", "-x", proxyUrl("http", listener), origin.httpUrl]);
      expect([plain.status, egressOf(plain), tunnel.status, egressOf(tunnel)]).toEqual([200, "127.0.0.2", 200, "127.0.0.2"]);
    }
    expect(listener.pool.isBenched(90)).toBe(true);
  });

  it("refuses private targets with the guard closed (403, SOCKS rule failure)", async () => {
    const closed = new OutboundGuard({ allowPrivateNetworkTargets: false });
    const http = await open({ protocol: "http", listenProtocol: "http", guard: closed }, [upstreamOf(tinyA, 1)]);
    expect((await curl(["-x", proxyUrl("http", http), origin.httpUrl])).status).toBe(403);
    expect((await curl(["-p", "-x", proxyUrl("http", http), origin.httpUrl])).exitCode).not.toBe(0);
    const socks = await open({ protocol: "socks5", listenProtocol: "socks5", guard: closed }, [upstreamOf(microsocks, 4)]);
    expect((await curl(["--socks5", `127.0.0.1:${socks.port}`, origin.httpUrl])).exitCode).toBe(97);
  });

  /** Records failed upstream attempts by reason. */
  const failureRecorder = (): { observer: RotatorObserver; reasons: string[] } => {
    const reasons: string[] = [];
    const ignore = (): void => undefined;
    return { reasons, observer: { request: ignore, connectionOpened: ignore, connectionClosed: ignore, clientBytes: ignore, upstreamFailure: (_id, reason) => reasons.push(reason) } };
  };

  it("answers 504 when an HTTP upstream accepts and never answers, failing over only requests that are safe to repeat", async () => {
    const tarpit = await startTarpit();
    peers.push(tarpit);
    // The ring is in proxy id order: the silent or refusing upstream (ids 80, 81) comes before tinyA (99).
    const silent: Upstream = { proxyId: 80, ip: tarpit.host, port: tarpit.port, username: "", password: "", country: "N/A" };
    const alone = failureRecorder();
    const only = await open({ protocol: "http", listenProtocol: "http", responseTimeoutMs: 500, observer: alone.observer }, [silent]);
    const started = Date.now();
    const timedOut = await curl(["-x", proxyUrl("http", only), origin.httpUrl]);
    expect(timedOut.status).toBe(504);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(alone.reasons).toEqual(["response_timeout"]);

    // A GET is idempotent and carries no body: the next upstream answers it.
    const mixed = failureRecorder();
    const failover = await open({ protocol: "http", listenProtocol: "http", responseTimeoutMs: 500, observer: mixed.observer }, [silent, upstreamOf(tinyA, 99)]);
    const get = await curl(["-x", proxyUrl("http", failover), origin.httpUrl]);
    expect([get.status, egressOf(get)]).toEqual([200, "127.0.0.2"]);
    expect(mixed.reasons).toEqual(["response_timeout"]);

    // Refused at connect, an upstream has seen nothing: even a POST with a body goes to the next one.
    const refusing: Upstream = { proxyId: 81, ip: "127.0.0.1", port: await closedPort(), username: "", password: "", country: "N/A" };
    const refused = await open({ protocol: "http", listenProtocol: "http" }, [refusing, upstreamOf(tinyA, 99)]);
    const posted = await curl(["--data-binary", "x=1", "-x", proxyUrl("http", refused), origin.bodyUrl]);
    expect([posted.status, posted.body]).toEqual([200, "x=1"]);

    // Once received, a POST may have taken effect upstream: it is never sent twice, with or without a body.
    for (const body of [["-X", "POST"], ["--data-binary", "x=1"]]) {
      const post = await open({ protocol: "http", listenProtocol: "http", responseTimeoutMs: 500 }, [silent, upstreamOf(tinyA, 99)]);
      expect((await curl([...body, "-x", proxyUrl("http", post), origin.httpUrl])).status).toBe(504);
    }

    // Through a SOCKS tunnel the deadline holds too: microsocks reaches a target that never answers.
    const tunnelled = failureRecorder();
    const socks = await open({ protocol: "socks5", listenProtocol: "http", responseTimeoutMs: 500, observer: tunnelled.observer }, [upstreamOf(microsocks, 4)]);
    expect((await curl(["-x", proxyUrl("http", socks), `http://${tarpit.host}:${tarpit.port}/`])).status).toBe(504);
    expect(tunnelled.reasons).toEqual(["response_timeout"]);
  });

  it("relays Expect: 100-continue, so curl's POST of a file over 1 KiB arrives whole", async () => {
    const file = join(dataDir, "upload.bin");
    const payload = Array.from({ length: 3000 }, (_, i) => `line ${i} of the upload\n`).join("");
    await writeFile(file, payload);
    for (const [protocol, upstream] of [["http", upstreamOf(tinyA, 1)], ["socks5", upstreamOf(microsocks, 4)]] as const) {
      const listener = await open({ protocol, listenProtocol: "http" }, [upstream]);
      // curl 7.88 asks on its own only above 1 MiB, hence the header. It waits up to 30 s for the 100 before
      // sending the body anyway: only a relayed 100 answers within --max-time.
      const result = await curl(["-i", "-H", "Expect: 100-continue", "--expect100-timeout", "30", "--data-binary", `@${file}`, "-x", proxyUrl("http", listener), origin.bodyUrl]);
      expect(result.status).toBe(200);
      expect(result.body).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
      expect(result.body.slice(result.body.indexOf("\r\n\r\n", result.body.lastIndexOf("HTTP/1.1 200")) + 4)).toBe(payload);
    }
    // Above 1 MiB curl asks on its own; the origin's limit is 1 MiB, and its early 413 reaches the client.
    const big = join(dataDir, "too-big.bin");
    await writeFile(big, Buffer.alloc(2 * 1024 * 1024, 97));
    const listener = await open({ protocol: "http", listenProtocol: "http" }, [upstreamOf(tinyA, 1)]);
    const refused = await curl(["--data-binary", `@${big}`, "-x", proxyUrl("http", listener), origin.bodyUrl]);
    expect(refused.status).toBe(413);
  });

  it("closes a CONNECT or SOCKS tunnel that carries no byte for the idle timeout, and keeps a busy one", async () => {
    const tarpit = await startTarpit();
    peers.push(tarpit);
    const idleMs = 400;
    const http = await open({ protocol: "http", listenProtocol: "http", tunnelIdleTimeoutMs: idleMs }, [upstreamOf(tinyA, 1)]);
    const socks = await open({ protocol: "socks5", listenProtocol: "socks5", tunnelIdleTimeoutMs: idleMs }, [upstreamOf(microsocks, 4)]);
    /** A tunnel's client end, once the listener said it is open. */
    const tunnelTo = async (listener: RotatorListener, host: string, port: number): Promise<{ socket: net.Socket; received: () => string; closed: () => boolean }> => {
      const socket = net.connect(listener.port, "127.0.0.1");
      let text = "";
      let closed = false;
      socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
      socket.on("error", () => undefined);
      socket.on("close", () => (closed = true));
      if (listener === http) {
        socket.write(`CONNECT ${host}:${port} HTTP/1.1\r\nHost: ${host}:${port}\r\n\r\n`);
        await waitFor(() => text.includes("\r\n\r\n"), { what: "the CONNECT answer" });
        expect(text).toMatch(/^HTTP\/1\.1 200 /);
      } else {
        const portBytes = Buffer.alloc(2);
        portBytes.writeUInt16BE(port);
        socket.write(Buffer.from([5, 1, 0]));
        await waitFor(() => text.length >= 2, { what: "the SOCKS5 method" });
        socket.write(Buffer.concat([Buffer.from([5, 1, 0, 1, ...host.split(".").map(Number)]), portBytes]));
        await waitFor(() => text.length >= 12, { what: "the SOCKS5 reply" });
        expect(text.charCodeAt(3)).toBe(0);
      }
      text = "";
      return { socket, received: () => text, closed: () => closed };
    };

    for (const listener of [http, socks]) {
      const silent = await tunnelTo(listener, tarpit.host, tarpit.port);
      const opened = Date.now();
      await waitFor(() => silent.closed(), { timeoutMs: 5_000, what: "the idle tunnel to close" });
      expect(Date.now() - opened).toBeGreaterThanOrEqual(idleMs - 50);

      // Requests one after the other for three times the idle timeout: the tunnel stays open.
      const busy = await tunnelTo(listener, origin.host, origin.httpPort);
      const started = Date.now();
      for (let i = 1; Date.now() - started < 3 * idleMs; i++) {
        busy.socket.write(`GET /judge HTTP/1.1\r\nHost: ${origin.host}\r\n\r\n`);
        await waitFor(() => (busy.received().match(/REMOTE_ADDR/g) ?? []).length === i, { what: `answer ${i}` });
      }
      expect(busy.closed()).toBe(false);
      busy.socket.destroy();
    }
  });

  it("reports an open tunnel's bytes while it runs, and the rest when it closes", async () => {
    let bytesIn = 0;
    let bytesOut = 0;
    const ignore = (): void => undefined;
    const observer: RotatorObserver = {
      request: ignore,
      upstreamFailure: ignore,
      connectionOpened: ignore,
      connectionClosed: ignore,
      clientBytes: (_id, read, written) => {
        bytesIn += read;
        bytesOut += written;
      },
    };
    const listener = await open({ protocol: "http", listenProtocol: "http", bytesReportIntervalMs: 100, observer }, [upstreamOf(tinyA, 1)]);
    const socket = net.connect(listener.port, "127.0.0.1");
    let text = "";
    let closed = false;
    socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
    socket.on("close", () => (closed = true));
    socket.write(`CONNECT ${origin.host}:${origin.httpPort} HTTP/1.1\r\nHost: x\r\n\r\n`);
    await waitFor(() => text.includes("\r\n\r\n"), { what: "the CONNECT answer" });
    socket.write(`GET /judge HTTP/1.1\r\nHost: ${origin.host}\r\n\r\n`);
    await waitFor(() => text.includes("REMOTE_ADDR"), { what: "the judge's answer" });
    // Still open: the bytes so far are counted.
    await waitFor(() => bytesOut >= text.length && bytesIn > 0, { what: "a report while the tunnel is open" });
    expect(closed).toBe(false);
    const sent = socket.bytesWritten;
    socket.write(`GET /judge HTTP/1.1\r\nHost: ${origin.host}\r\nConnection: close\r\n\r\n`);
    await waitFor(() => closed, { what: "the tunnel to close" });
    // Every byte counted once: the totals are the client's own.
    await waitFor(() => bytesIn === socket.bytesWritten && bytesOut === socket.bytesRead, { what: "the totals at close" });
    expect(socket.bytesWritten).toBeGreaterThan(sent);
  });

  it("stop() closes the port and every open tunnel", async () => {
    const listener = await open({ protocol: "http", listenProtocol: "http" }, [upstreamOf(tinyA, 1)]);
    const client = net.connect({ host: "127.0.0.1", port: listener.port });
    let answer = "";
    client.on("data", (chunk: Buffer) => (answer += chunk.toString("latin1")));
    let closed = false;
    client.on("close", () => (closed = true));
    client.on("error", () => undefined);
    client.write(`CONNECT ${origin.host}:${origin.httpPort} HTTP/1.1\r\nHost: ${origin.host}:${origin.httpPort}\r\n\r\n`);
    await waitFor(() => answer.startsWith("HTTP/1.1 200"), { what: "tunnel established" });
    await listener.stop();
    await waitFor(() => closed, { what: "tunnel closed" });
    const refused = await curl(["-x", proxyUrl("http", listener), origin.httpUrl]);
    expect(refused.exitCode).toBe(7);
  });
});
