import http from "node:http";
import { performance } from "node:perf_hooks";

/** Latency samples of one side of one scenario, in milliseconds. */
export interface Samples {
  latenciesMs: number[];
  errors: number;
  firstError?: string;
}

export interface LoadOptions {
  concurrency: number;
  /** Requests to measure (a bound, with `maxMs`). */
  requests: number;
  maxMs: number;
}

/**
 * `concurrency` workers run `task(i)` back to back until `requests` were
 * started or `maxMs` passed, whichever comes first; each call is timed.
 */
export async function runLoad(options: LoadOptions, task: (i: number) => Promise<void>): Promise<Samples> {
  const samples: Samples = { latenciesMs: [], errors: 0 };
  const deadline = performance.now() + options.maxMs;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < options.requests && performance.now() < deadline) {
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
    merged.latenciesMs.push(...part.latenciesMs);
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
