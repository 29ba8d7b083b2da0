import http from "node:http";
import net from "node:net";
import { performance } from "node:perf_hooks";

/** Latency samples of one side of one scenario, in milliseconds. */
export interface Samples {
  latenciesMs: number[];
  errors: number;
  firstError?: string;
}

export interface LoadOptions {
  concurrency: number;
  /** Requests to measure, at least (unless `maxMs` passes first). */
  requests: number;
  /** Time to keep measuring, at least, once `requests` were started (unless `maxMs` passes first); 0 by default. */
  minMs?: number;
  maxMs: number;
}

/**
 * `concurrency` workers run `task(i)` back to back until both `requests`
 * were started and `minMs` passed, or until `maxMs` passed, whichever comes
 * first; each call is timed.
 */
export async function runLoad(options: LoadOptions, task: (i: number) => Promise<void>): Promise<Samples> {
  const samples: Samples = { latenciesMs: [], errors: 0 };
  const started = performance.now();
  const deadline = started + options.maxMs;
  const minimumUntil = started + (options.minMs ?? 0);
  let next = 0;
  const more = (now: number): boolean => now < deadline && (next < options.requests || now < minimumUntil);
  const worker = async (): Promise<void> => {
    while (more(performance.now())) {
      const i = next++;
      const started = performance.now();
      try {
        await task(i);
        samples.latenciesMs.push(performance.now() - started);
      } catch (error) {
        samples.errors++;
        samples.firstError ??= error instanceof Error ? error.message : String(error);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return samples;
}

export interface PacedOptions {
  /** Workers, one request in flight on each. */
  connections: number;
  /** Requests a second offered, spread evenly over the workers. */
  rate: number;
  durationMs: number;
}

/**
 * An open-loop load: every worker has its own schedule of send times
 * (`connections / rate` apart, offset from the others), so each side gets the
 * same offered load whatever its speed; a side that falls behind its
 * schedule is charged the wait too.
 */
export async function runPaced(options: PacedOptions, task: (i: number) => Promise<void>): Promise<Samples> {
  const samples: Samples = { latenciesMs: [], errors: 0 };
  const started = performance.now();
  const intervalMs = (options.connections * 1000) / options.rate;
  let next = 0;
  const worker = async (k: number): Promise<void> => {
    for (let slot = started + (k * intervalMs) / options.connections; slot < started + options.durationMs; slot += intervalMs) {
      const wait = slot - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      // Behind schedule (the previous answer came after this slot): timed from the slot. On time:
      // from the send, so this process's own timer lateness is charged to no side.
      const from = wait > 0 ? performance.now() : slot;
      try {
        await task(next++);
        samples.latenciesMs.push(performance.now() - from);
      } catch (error) {
        samples.errors++;
        samples.firstError ??= error instanceof Error ? error.message : String(error);
      }
    }
  };
  await Promise.all(Array.from({ length: options.connections }, (_, k) => worker(k)));
  return samples;
}

/** Nearest-rank percentile (p in 0..100) of unsorted samples; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] ?? Number.NaN;
}

export function mergeSamples(parts: readonly Samples[]): Samples {
  const merged: Samples = { latenciesMs: [], errors: 0 };
  for (const part of parts) {
    // A loop, not push(...): a spread of 100k+ samples overflows the call stack.
    for (const latency of part.latenciesMs) merged.latenciesMs.push(latency);
    merged.errors += part.errors;
    merged.firstError ??= part.firstError;
  }
  return merged;
}

export interface HttpResult {
  status: number;
  body: Buffer;
}

/**
 * A keep-alive HTTP client for the gateway on loopback: one agent, at most
 * `maxSockets` connections, bodies read to the end.
 */
export class LoopbackClient {
  private readonly agent: http.Agent;

  constructor(
    private readonly port: number,
    maxSockets: number,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets });
  }

  request(method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<HttpResult> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: "127.0.0.1", port: this.port, method, path, agent: this.agent, headers: body ? { ...headers, "Content-Length": String(body.length) } : headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  }

  /** Streams the response, handing each chunk to `onChunk` without keeping it. */
  stream(method: string, path: string, headers: Record<string, string>, body: Buffer, onChunk: (chunk: Buffer) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: "127.0.0.1", port: this.port, method, path, agent: this.agent, headers: { ...headers, "Content-Length": String(body.length) } },
        (res) => {
          res.on("data", onChunk);
          res.on("end", () => resolve(res.statusCode ?? 0));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/**
 * The list scenarios' load generator: GET requests over keep-alive
 * HTTP/1.1 connections (opened as concurrent requests need them, then
 * reused), one request in flight per connection, responses framed by their
 * Content-Length (anything else is an error).
 *
 * Why not node:http: its client costs about as much CPU per request as a
 * fifth of the gateway's page, and on the benchmark's two cores that CPU is
 * taken from the gateway and PostgreSQL, so the instrument would inflate
 * the API's latency (clients of a real deployment run on other machines).
 * This client writes a prepared request line and reads one header block:
 * the same role wrk or autocannon play, kept in-process so the latencies
 * are measured exactly as the raw SQL side's (docs/benchmarks.md).
 */
export class KeepAliveGetClient {
  private readonly idle: KeepAliveConnection[] = [];
  private readonly all = new Set<KeepAliveConnection>();

  constructor(
    private readonly port: number,
    private readonly headers: Record<string, string>,
  ) {}

  async get(path: string): Promise<HttpResult> {
    let connection = this.idle.pop();
    while (connection && !connection.reusable) connection = this.idle.pop();
    connection ??= await this.open();
    const result = await connection.get(path, this.headers);
    if (connection.reusable) this.idle.push(connection);
    else this.all.delete(connection);
    return result;
  }

  close(): void {
    for (const connection of this.all) connection.destroy();
    this.all.clear();
    this.idle.length = 0;
  }

  private async open(): Promise<KeepAliveConnection> {
    const socket = net.connect(this.port, "127.0.0.1");
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    const connection = new KeepAliveConnection(socket);
    this.all.add(connection);
    return connection;
  }
}

const HEADER_END = Buffer.from("\r\n\r\n");

class KeepAliveConnection {
  reusable = true;
  private buffered: Buffer = Buffer.alloc(0);
  private waiting: { resolve(result: HttpResult): void; reject(error: Error): void } | null = null;

  constructor(private readonly socket: net.Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
      this.deliver();
    });
    const fail = (error: Error): void => {
      this.reusable = false;
      const waiting = this.waiting;
      this.waiting = null;
      waiting?.reject(error);
    };
    socket.on("error", fail);
    socket.on("close", () => fail(new Error("connection closed")));
  }

  get(path: string, headers: Record<string, string>): Promise<HttpResult> {
    let head = `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
    for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(`${head}\r\n`, "latin1");
    });
  }

  destroy(): void {
    this.reusable = false;
    this.socket.destroy();
  }

  /** Resolves the waiting request once its whole response is buffered. */
  private deliver(): void {
    const headerEnd = this.buffered.indexOf(HEADER_END);
    if (headerEnd === -1 || !this.waiting) return;
    const head = this.buffered.toString("latin1", 0, headerEnd);
    const status = Number(head.slice(9, 12));
    const length = /\r\ncontent-length: *(\d+)/i.exec(head)?.[1];
    if (length === undefined) {
      this.socket.destroy(new Error(`response without Content-Length: ${head.split("\r\n")[0] ?? ""}`));
      return;
    }
    const end = headerEnd + HEADER_END.length + Number(length);
    if (this.buffered.length < end) return;
    const body = this.buffered.subarray(headerEnd + HEADER_END.length, end);
    this.buffered = this.buffered.subarray(end);
    if (/\r\nconnection: *close/i.test(head)) this.reusable = false;
    const waiting = this.waiting;
    this.waiting = null;
    waiting.resolve({ status, body });
  }
}
