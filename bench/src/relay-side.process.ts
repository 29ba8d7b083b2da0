import http from "node:http";
import net from "node:net";
import { Server as ProxyChainServer } from "proxy-chain";

/**
 * The rotator bench's helpers beside Roost, one per forked process (detached, so
 * each is its own scheduling group as a separately started server is):
 * - `raw-relay`: every client connection piped to a new connection to the
 *   upstream, bytes untouched (the bound for a forwarder in Node);
 * - `node-http`: a minimal forward proxy on node:http, absolute-form requests
 *   sent on with http.request through one keep-alive agent, CONNECT as a
 *   net.connect pipe (also the upstream holding the idle tunnels);
 * - `proxy-chain`: apify's proxy-chain with the upstream as `upstreamProxyUrl`;
 * - `source`: a CONNECT target that writes `bytes` to each connection, then ends;
 * - `hold`: a CONNECT target that keeps every connection open and silent.
 */
export type RelayKind = "raw-relay" | "node-http" | "proxy-chain" | "source" | "hold";

export type RelayRequest = { kind: "start"; relay: RelayKind; upstreamPort?: number; bytes?: number } | { kind: "usage" };
export type RelayMessage =
  | { kind: "ready"; port: number }
  | { kind: "usage"; cpuUs: number; connections: number }
  | { kind: "failed"; message: string };

const HOST = "127.0.0.1";
let connections = 0;

const send = (message: RelayMessage): void => {
  process.send?.(message);
};

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    // A deep accept queue: the idle-tunnel part opens thousands of connections in bursts.
    server.listen({ host: HOST, port: 0, backlog: 4096 }, () => {
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : 0);
    });
  });
}

function countConnections(server: net.Server): void {
  server.on("connection", (socket: net.Socket) => {
    connections++;
    socket.once("close", () => connections--);
  });
}

function pipeBoth(a: net.Socket, b: net.Socket): void {
  a.on("error", () => b.destroy());
  b.on("error", () => a.destroy());
  a.on("close", () => b.destroy());
  b.on("close", () => a.destroy());
  a.pipe(b);
  b.pipe(a);
}

function rawRelay(upstreamPort: number): net.Server {
  return net.createServer({ noDelay: true }, (client) => pipeBoth(client, net.connect({ host: HOST, port: upstreamPort, noDelay: true })));
}

function nodeHttpProxy(upstreamPort: number): net.Server {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const server = http.createServer((req, res) => {
    const headers = { ...req.headers };
    delete headers["proxy-connection"];
    delete headers["proxy-authorization"];
    delete headers.connection;
    delete headers["keep-alive"];
    const upstream = http.request({ host: HOST, port: upstreamPort, method: req.method, path: req.url, headers, agent }, (answer) => {
      const back = { ...answer.headers };
      delete back.connection;
      delete back["keep-alive"];
      res.writeHead(answer.statusCode ?? 502, back);
      answer.pipe(res);
    });
    upstream.on("error", () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    req.pipe(upstream);
  });
  server.keepAliveTimeout = 120_000;
  server.on("connect", (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    const [host, port] = (req.url ?? "").split(":");
    const target = net.connect({ host: host ?? HOST, port: Number(port), noDelay: true }, () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) target.write(head);
      pipeBoth(client, target);
    });
    target.once("error", () => client.destroy());
  });
  return server;
}

async function proxyChain(upstreamPort: number): Promise<number> {
  const server = new ProxyChainServer({ host: HOST, port: 0, verbose: false, prepareRequestFunction: () => ({ upstreamProxyUrl: `http://${HOST}:${upstreamPort}` }) });
  await server.listen();
  countConnections(server.server);
  return server.port;
}

function source(bytes: number): net.Server {
  const block = Buffer.alloc(64 * 1024, 0x61);
  return net.createServer({ noDelay: true }, (socket) => {
    socket.on("error", () => socket.destroy());
    let left = bytes;
    const fill = (): void => {
      while (left > 0) {
        const part = left >= block.length ? block : block.subarray(0, left);
        left -= part.length;
        if (!socket.write(part)) return void socket.once("drain", fill);
      }
      socket.end();
    };
    fill();
  });
}

function hold(): net.Server {
  return net.createServer((socket) => socket.on("error", () => socket.destroy()));
}

async function start(relay: RelayKind, upstreamPort: number, bytes: number): Promise<number> {
  if (relay === "proxy-chain") return proxyChain(upstreamPort);
  const server = relay === "raw-relay" ? rawRelay(upstreamPort) : relay === "node-http" ? nodeHttpProxy(upstreamPort) : relay === "source" ? source(bytes) : hold();
  countConnections(server);
  return listen(server);
}

// Detached from the benchmark's session: when its IPC channel closes, this helper goes too.
process.once("disconnect", () => process.exit(0));

process.on("message", (request: RelayRequest) => {
  if (request.kind === "usage") {
    const usage = process.cpuUsage();
    return send({ kind: "usage", cpuUs: usage.user + usage.system, connections });
  }
  start(request.relay, request.upstreamPort ?? 0, request.bytes ?? 0).then(
    (port) => send({ kind: "ready", port }),
    (error: unknown) => send({ kind: "failed", message: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
  );
});
