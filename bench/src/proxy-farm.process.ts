import net from "node:net";

/**
 * The checker bench's fake-proxy farm, a process of its own so its CPU counts apart: every loopback listener
 * answers a GET (absolute- or origin-form) with a judge body echoing the request headers. It exits when the
 * benchmark's IPC channel closes or its lifetime ends.
 */
export interface FarmEndpoint {
  host: string;
  port: number;
}

export interface FarmLayout {
  /** Listeners that answer at once. */
  alive: number;
  /** Listeners that answer after `slowMs`. */
  slow: number;
  slowMs: number;
  /** Ports that refuse connections (listened on once, then closed). */
  dead: number;
  /** Listeners per loopback address (127.0.1.1, 127.0.1.2, ...). */
  portsPerAddress: number;
  /** The farm exits after this long whatever happens, ms. */
  lifetimeMs: number;
}

export type FarmRequest = { kind: "start"; layout: FarmLayout } | { kind: "usage" };
export type FarmMessage =
  | { kind: "ready"; alive: FarmEndpoint[]; slow: FarmEndpoint[]; dead: FarmEndpoint[]; judge: FarmEndpoint }
  | { kind: "usage"; cpuUs: number; answered: number }
  | { kind: "failed"; message: string };

/** Request heads larger than this are refused (a judge reads a few hundred bytes). */
const MAX_HEAD_BYTES = 16 * 1024;

let answered = 0;

/** azenv-style lines (`HTTP_USER_AGENT = ...`), as public judges answer, then a complete HTTP/1.1 response. */
function judgeAnswer(head: string, remoteAddress: string): string {
  const lines = head.split("\r\n");
  const requestLine = lines[0] ?? "";
  if (!requestLine.startsWith("GET ")) return "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  let body = `REMOTE_ADDR = ${remoteAddress}\nREQUEST_METHOD = GET\n`;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    body += `HTTP_${line.slice(0, colon).toUpperCase().replaceAll("-", "_")} = ${line.slice(colon + 1).trim()}\n`;
  }
  return `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/** A connection handler; `delayMs` > 0 makes a slow proxy. A proxied answer shows the proxy's own address, as a real proxy's egress does. */
function handler(delayMs: number, direct: boolean): (socket: net.Socket) => void {
  return (socket) => {
    let head = "";
    socket.on("error", () => undefined);
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      if (head.endsWith("\r\n\r\n")) return;
      head += chunk;
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.length > MAX_HEAD_BYTES) socket.destroy();
        return;
      }
      head = head.slice(0, end + 4);
      const answer = judgeAnswer(head.slice(0, end), (direct ? socket.remoteAddress : socket.localAddress) ?? "127.0.0.1");
      const send = (): void => {
        answered++;
        socket.end(answer, "latin1");
      };
      if (delayMs > 0) setTimeout(send, delayMs);
      else send();
    });
  };
}

function listen(server: net.Server, host: string): Promise<FarmEndpoint> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port: 0, host, backlog: 4096 }, () => {
      server.off("error", reject);
      const address = server.address();
      if (!address || typeof address === "string") reject(new Error("farm listener has no port"));
      else resolve({ host, port: address.port });
    });
  });
}

async function start(layout: FarmLayout): Promise<FarmMessage> {
  let slot = 0;
  const nextHost = (): string => {
    const at = Math.floor(slot++ / layout.portsPerAddress);
    return `127.0.1.${1 + at}`;
  };
  if (layout.alive + layout.slow + layout.dead > 250 * layout.portsPerAddress) throw new Error("farm: more endpoints than 127.0.1.1-250 can hold");
  const open = async (count: number, delayMs: number): Promise<FarmEndpoint[]> => {
    const endpoints: FarmEndpoint[] = [];
    for (let i = 0; i < count; i++) endpoints.push(await listen(net.createServer(handler(delayMs, false)), nextHost()));
    return endpoints;
  };
  const alive = await open(layout.alive, 0);
  const slow = await open(layout.slow, layout.slowMs);
  // Dead: a port that was free on its address a moment ago; closed again, so a connect is refused.
  const closing = await Promise.all(
    Array.from({ length: layout.dead }, async () => {
      const server = net.createServer();
      const endpoint = await listen(server, nextHost());
      return { server, endpoint };
    }),
  );
  await Promise.all(closing.map(({ server }) => new Promise<void>((resolve) => server.close(() => resolve()))));
  const judge = await listen(net.createServer(handler(0, true)), "127.0.1.254");
  return { kind: "ready", alive, slow, dead: closing.map(({ endpoint }) => endpoint), judge };
}

const reply = (message: FarmMessage): void => {
  process.send?.(message);
};

process.on("disconnect", () => process.exit(0));
process.on("message", (request: FarmRequest) => {
  if (request.kind === "start") {
    setTimeout(() => process.exit(0), request.layout.lifetimeMs).unref();
    start(request.layout).then(reply, (error: unknown) => reply({ kind: "failed", message: error instanceof Error ? error.message : String(error) }));
  } else {
    const usage = process.cpuUsage();
    reply({ kind: "usage", cpuUs: usage.user + usage.system, answered });
  }
});
