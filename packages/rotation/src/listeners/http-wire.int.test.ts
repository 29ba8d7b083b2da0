import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";

import { OutboundGuard } from "@roost/net";
import { freePort, waitFor } from "@roost/testkit";

import { RotatorListener } from "../rotator-listener.js";
import type { RotatorDefinition } from "../rotator-repository.js";

// An in-process "upstream proxy": answers absolute-form requests itself, echoing what arrived, and counts its connections.
interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

describe("http listener wire handling", () => {
  let upstream: http.Server;
  let upstreamPort: number;
  let upstreamConnections = 0;
  const seen: Seen[] = [];
  const slowSockets: net.Socket[] = [];
  let pausedUpload: http.IncomingMessage | undefined;
  const BIG_BYTES = 256 * 1024 * 1024;
  let bigSent = 0;
  let listener: RotatorListener;

  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      if (req.url?.endsWith("/slow")) {
        slowSockets.push(req.socket);
        return;
      }
      if (req.url?.endsWith("/upload-paused")) {
        // Reads nothing of the body until the test resumes it, then answers how much arrived.
        req.pause();
        pausedUpload = req;
        let received = 0;
        req.on("data", (chunk: Buffer) => (received += chunk.length));
        req.on("end", () => res.end(`received:${received}`));
        return;
      }
      if (req.url?.endsWith("/big")) {
        res.writeHead(200, { "content-length": String(BIG_BYTES) });
        const block = Buffer.alloc(64 * 1024, 120);
        const pump = (): void => {
          while (bigSent < BIG_BYTES) {
            bigSent += block.length;
            if (!res.write(block)) return void res.once("drain", pump);
          }
          res.end();
        };
        pump();
        return;
      }
      let body = "";
      req.setEncoding("latin1");
      req.on("data", (chunk: string) => (body += chunk));
      req.on("end", () => {
        seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
        if (req.url?.endsWith("/chunked")) {
          res.writeHead(200, { "content-type": "text/plain" });
          res.write("part-one;");
          res.end("part-two");
          return;
        }
        if (req.url?.endsWith("/close")) {
          res.writeHead(200, { connection: "close", "content-length": "7" });
          res.end("closing");
          return;
        }
        const payload = `echo:${req.method}:${body}`;
        res.writeHead(200, { "content-type": "text/plain", "x-echo-length": String(body.length), "content-length": String(payload.length) });
        res.end(req.method === "HEAD" ? undefined : payload);
      });
    });
    upstream.on("connection", () => upstreamConnections++);
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    upstreamPort = (upstream.address() as AddressInfo).port;
    const definition: RotatorDefinition = {
      id: 1, userId: 1, name: "wire", instanceId: "t", protocol: "http", listenProtocol: "http", listenPort: await freePort(),
      authRequired: false, authUsername: "", authPasswordHash: "", reputationLabels: [], uptimeFilterType: null, uptimePercentage: null,
    };
    listener = new RotatorListener({ definition, host: "127.0.0.1", guard: new OutboundGuard({ allowPrivateNetworkTargets: true }), serverKey: "k" });
    listener.pool.replace([{ proxyId: 1, ip: "127.0.0.1", port: upstreamPort, username: "up", password: "up-pass", country: "N/A" }]);
    await listener.start();
  });

  afterAll(async () => {
    await listener.stop();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  /** One raw exchange on a fresh or given socket; returns the raw response text once `done` says so. */
  async function exchange(socket: net.Socket, request: string, done: (text: string) => boolean): Promise<string> {
    let text = "";
    const onData = (chunk: Buffer): void => void (text += chunk.toString("latin1"));
    socket.on("data", onData);
    socket.write(request);
    await waitFor(() => done(text), { what: "a complete response" }).catch((error: unknown) => {
      throw new Error(`${String(error)}: ${JSON.stringify(text)}`);
    });
    socket.off("data", onData);
    return text;
  }
  const connect = async (): Promise<net.Socket> => {
    const socket = net.connect({ host: "127.0.0.1", port: listener.port });
    await new Promise<void>((resolve) => socket.once("connect", resolve));
    return socket;
  };
  const target = "http://origin.test/path?q=1";

  it("keeps both sides alive across requests, drops hop-by-hop and client proxy headers, adds the upstream's credentials", async () => {
    const before = upstreamConnections;
    const socket = await connect();
    const request = `GET ${target} HTTP/1.1\r\nHost: origin.test\r\nProxy-Authorization: Basic eDp5\r\nConnection: keep-alive, X-Drop\r\nX-Drop: 1\r\nKeep-Alive: 5\r\nX-Keep: yes\r\n\r\n`;
    const first = await exchange(socket, request, (t) => t.endsWith("echo:GET:"));
    const second = await exchange(socket, request, (t) => t.endsWith("echo:GET:"));
    socket.destroy();
    expect(first).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(second).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(upstreamConnections - before).toBe(1);
    const last = seen.at(-1);
    expect(last?.url).toBe(target);
    expect(last?.headers["x-keep"]).toBe("yes");
    expect(last?.headers["x-drop"]).toBeUndefined();
    expect(last?.headers["keep-alive"]).toBeUndefined();
    expect(last?.headers["proxy-authorization"]).toBe(`Basic ${Buffer.from("up:up-pass").toString("base64")}`);
  });

  it("relays request bodies by length and chunked, and chunked responses", async () => {
    const socket = await connect();
    const sized = await exchange(socket, `POST ${target} HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 5\r\n\r\nhello`, (t) => t.endsWith("echo:POST:hello"));
    expect(sized).toMatch(/x-echo-length: 5/i);
    const chunked = await exchange(socket, `PUT ${target} HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\n\r\n`, (t) => t.endsWith("echo:PUT:abcdefg"));
    expect(chunked).toMatch(/^HTTP\/1\.1 200/);
    const response = await exchange(socket, `GET http://origin.test/chunked HTTP/1.1\r\nHost: origin.test\r\n\r\n`, (t) => t.endsWith("0\r\n\r\n"));
    expect(response).toMatch(/transfer-encoding: chunked/i);
    expect(response).toContain("part-one;");
    // The connection still carries a request after a chunked response.
    const after = await exchange(socket, `HEAD ${target} HTTP/1.1\r\nHost: origin.test\r\n\r\n`, (t) => t.includes("\r\n\r\n"));
    expect(after).toMatch(/^HTTP\/1\.1 200/);
    socket.destroy();
  });

  it("closes the client after an HTTP/1.0 request and after a response the upstream closes", async () => {
    const old = await connect();
    let closed = false;
    old.on("close", () => (closed = true));
    await exchange(old, `GET ${target} HTTP/1.0\r\nHost: origin.test\r\n\r\n`, (t) => t.endsWith("echo:GET:"));
    await waitFor(() => closed, { what: "HTTP/1.0 client closed" });
    const next = await connect();
    const text = await exchange(next, `GET http://origin.test/close HTTP/1.1\r\nHost: origin.test\r\n\r\n`, (t) => t.endsWith("closing"));
    expect(text).toMatch(/^HTTP\/1\.1 200/);
    next.destroy();
  });

  it("closes the upstream connection of a client that leaves before the answer", async () => {
    const socket = await connect();
    socket.write("GET http://origin.test/slow HTTP/1.1\r\nHost: origin.test\r\n\r\n");
    const upstreamSide = await waitFor(() => slowSockets[0], { what: "the request upstream" });
    let closed = false;
    upstreamSide.once("close", () => (closed = true));
    socket.destroy();
    await waitFor(() => closed, { what: "the upstream connection closed" });
  });

  it("sends a request with a body on a fresh upstream connection", async () => {
    const socket = await connect();
    await exchange(socket, `GET ${target} HTTP/1.1\r\nHost: origin.test\r\n\r\n`, (t) => t.endsWith("echo:GET:"));
    const before = upstreamConnections;
    await exchange(socket, `POST ${target} HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 2\r\n\r\nhi`, (t) => t.endsWith("echo:POST:hi"));
    expect(upstreamConnections - before).toBe(1);
    socket.destroy();
  });

  it("holds the upstream back while the client does not read (backpressure), then delivers every byte", async () => {
    const socket = await connect();
    let received = 0;
    socket.pause();
    socket.write("GET http://origin.test/big HTTP/1.1\r\nHost: origin.test\r\n\r\n");
    // The upstream stops when the buffers between it and the paused client are full: its count holds still.
    let last = -1;
    let still = 0;
    await waitFor(
      () => {
        still = bigSent > 0 && bigSent === last ? still + 1 : 0;
        last = bigSent;
        return still >= 5;
      },
      { intervalMs: 100, what: "the upstream to stall" },
    );
    expect(bigSent).toBeLessThan(64 * 1024 * 1024);
    socket.on("data", (chunk: Buffer) => (received += chunk.length));
    socket.resume();
    await waitFor(() => received >= BIG_BYTES, { timeoutMs: 30_000, what: "every byte" });
    socket.destroy();
  }, 60_000);

  it("holds the client back while the upstream does not read a request body (backpressure), then delivers every byte", async () => {
    const UPLOAD = 256 * 1024 * 1024;
    const socket = await connect();
    let answer = "";
    socket.on("data", (chunk: Buffer) => (answer += chunk.toString("latin1")));
    socket.write(`POST http://origin.test/upload-paused HTTP/1.1\r\nHost: origin.test\r\nContent-Length: ${UPLOAD}\r\n\r\n`);
    const block = Buffer.alloc(1024 * 1024, 121);
    let sent = 0;
    const pump = (): void => {
      while (sent < UPLOAD) {
        sent += block.length;
        if (!socket.write(block)) return void socket.once("drain", pump);
      }
    };
    pump();
    const upload = await waitFor(() => pausedUpload, { what: "the upload upstream" });
    // The client stops when the buffers between it and the paused upstream are full: its count holds still.
    let last = -1;
    let still = 0;
    await waitFor(
      () => {
        still = sent === last ? still + 1 : 0;
        last = sent;
        return still >= 5;
      },
      { intervalMs: 100, what: "the client to stall" },
    );
    expect(sent).toBeLessThan(64 * 1024 * 1024);
    upload.resume();
    await waitFor(() => answer.endsWith(`received:${UPLOAD}`), { timeoutMs: 30_000, what: "every byte upstream" });
    socket.destroy();
  }, 60_000);

  it("refuses malformed requests: origin-form, smuggling framing, oversized heads", async () => {
    const bad = async (request: string): Promise<string> => {
      const socket = await connect();
      const text = await exchange(socket, request, (t) => t.includes("\r\n\r\n"));
      socket.destroy();
      return text.split("\r\n")[0] ?? "";
    };
    expect(await bad("GET /relative HTTP/1.1\r\nHost: x\r\n\r\n")).toBe("HTTP/1.1 400 Bad Request");
    expect(await bad(`POST ${target} HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n`)).toBe("HTTP/1.1 400 Bad Request");
    expect(await bad(`POST ${target} HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 40\r\n\r\nabc`)).toBe("HTTP/1.1 400 Bad Request");
    expect(await bad(`GET ${target} HTTP/1.1\r\nX-Big: ${"a".repeat(70_000)}\r\n\r\n`)).toBe("HTTP/1.1 431 Request Header Fields Too Large");
    expect(await bad(`GET ${target} HTTP/2.0\r\n\r\n`)).toBe("HTTP/1.1 505 HTTP Version Not Supported");
  });
});
