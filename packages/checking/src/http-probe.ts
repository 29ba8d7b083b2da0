import net from "node:net";

/** What a judge answered through the proxy: status, body (capped) and the time from connect to the last byte, in ms. */
export interface HttpProbeAnswer {
  status: number;
  body: Buffer;
  elapsedMs: number;
}

export interface HttpProbeRequest {
  /** The proxy's checked address and port (the caller ran the outbound guard). */
  address: string;
  port: number;
  /** An http:// judge URL. */
  url: URL;
  /** Request headers besides Host and Connection, lower-case names. */
  headers: Readonly<Record<string, string>>;
  /** `Basic ...` when the proxy has credentials. */
  proxyAuthorization?: string;
  deadlineMs: number;
  maxBodyBytes: number;
}

const HEAD_END = Buffer.from("\r\n\r\n");
const MAX_HEAD_BYTES = 16 * 1024;

/**
 * One absolute-form GET through an HTTP proxy, by hand: the checker's most
 * frequent probe, where a node:http request, an AbortSignal and an Error per
 * failure cost as much CPU as the check itself. Null when it failed.
 */
export function probeHttpThroughProxy(request: HttpProbeRequest): Promise<HttpProbeAnswer | null> {
  const started = performance.now();
  const { url } = request;
  let head = `GET ${url.href} HTTP/1.1\r\nHost: ${url.host}\r\n`;
  for (const name in request.headers) head += `${name}: ${request.headers[name] ?? ""}\r\n`;
  if (request.proxyAuthorization) head += `Proxy-Authorization: ${request.proxyAuthorization}\r\n`;
  head += "Connection: close\r\n\r\n";

  return new Promise((resolve) => {
    const socket = net.connect({ host: request.address, port: request.port, noDelay: true });
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    const finish = (answer: HttpProbeAnswer | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => finish(null), request.deadlineMs);
    // Listeners stay for the socket's life: a late error must not go unhandled.
    socket.on("error", () => finish(null));
    socket.once("connect", () => socket.write(head));
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
      // Enough read: the head and the capped body (a chunked body's framing counts too).
      if (received > MAX_HEAD_BYTES + request.maxBodyBytes + 1024) finish(parseAnswer(Buffer.concat(chunks), request.maxBodyBytes, started));
    });
    socket.on("end", () => finish(parseAnswer(Buffer.concat(chunks), request.maxBodyBytes, started)));
  });
}

/** Status and body of a whole (or capped) HTTP/1.x answer; null when it is not one. */
export function parseAnswer(raw: Buffer, maxBodyBytes: number, started: number): HttpProbeAnswer | null {
  const headEnd = raw.indexOf(HEAD_END);
  if (headEnd < 0 || headEnd > MAX_HEAD_BYTES) return null;
  const head = raw.toString("latin1", 0, headEnd);
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(head);
  if (!status) return null;
  let body = raw.subarray(headEnd + HEAD_END.length);
  if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) body = unchunk(body);
  else {
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (length) body = body.subarray(0, Number(length[1]));
  }
  return { status: Number(status[1]), body: body.subarray(0, maxBodyBytes), elapsedMs: performance.now() - started };
}

/** The data of a chunked body, as far as it arrived. */
function unchunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = body.indexOf("\r\n", at);
    if (lineEnd < 0) break;
    const size = Number.parseInt(body.toString("latin1", at, lineEnd), 16);
    if (!Number.isFinite(size) || size <= 0) break;
    parts.push(body.subarray(lineEnd + 2, Math.min(body.length, lineEnd + 2 + size)));
    at = lineEnd + 2 + size + 2;
    if (at > body.length) break;
  }
  return Buffer.concat(parts);
}
