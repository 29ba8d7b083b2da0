import net from "node:net";
import { randomBytes } from "node:crypto";
import got from "got";
import { HttpProxyAgent } from "http-proxy-agent";
import { batchesAtOnce, defaultJudgeMatcher, ensureStatisticsPartitions, JUDGE_BODY_LIMIT_BYTES, ProbeLimiter, runCheckBatch, type CheckBatchDeps } from "@roost/checking";
import { createDatabase } from "@roost/db";
import { OutboundGuard, requestThroughProxy } from "@roost/net";
import { createLogger } from "@roost/observability";
import type { FarmEndpoint } from "./proxy-farm.process.js";

/**
 * One side of the checker bench, in a fresh process per run so its CPU and
 * resident memory are its own: http-protocol checks of the farm's endpoints
 * at a fixed concurrency, `passes` times over the list.
 */
export type CheckerSide = "raw" | "roost" | "roost-probes" | "got";

export interface SideRun {
  side: CheckerSide;
  endpoints: FarmEndpoint[];
  /** The same endpoints' proxy ids in the bench database, in the same order (Roost's side). */
  proxyIds: number[];
  databaseUrl: string;
  userId: number;
  judgeUrl: string;
  concurrency: number;
  timeoutMs: number;
  passes: number;
  /** Checks run before the measured ones, so V8 has optimised each side's code. */
  warmupChecks: number;
}

export type SideRequest = { kind: "prepare"; run: SideRun } | { kind: "go" };
export type SideMessage =
  | { kind: "prepared" }
  | { kind: "done"; result: SideResult }
  | { kind: "failed"; message: string };

export interface SideResult {
  checks: number;
  alive: number;
  ms: number;
  /** This process's CPU over the measured checks, µs. */
  cpuUs: number;
  /** Resident memory before the measured checks and its peak during them (sampled every 20 ms), bytes. */
  rssBefore: number;
  rssPeak: number;
  /** Checks in flight, the mean of the same samples: below the concurrency when a side leaves slots idle. */
  meanInFlight: number;
}

/** The same ordinary request headers on every side; the token makes an echo of them unmistakable. */
const token = randomBytes(6).toString("hex");
const HEADERS = { "user-agent": `RoostBench/1 checker (${token})`, accept: "text/html,text/plain;q=0.9,*/*;q=0.8", "accept-encoding": "identity" };
const STANDARD_HEADERS = ["USER-AGENT", "HOST", "ACCEPT", "ACCEPT-ENCODING"];

/** One check: true when the endpoint answered 2xx with a judge body echoing our User-Agent. */
type Check = (endpoint: FarmEndpoint, index: number) => Promise<boolean>;

/** The minimal checker: connect, one absolute-form request, read to the end, one regex. */
function rawChecker(run: SideRun): Check {
  const url = new URL(run.judgeUrl);
  const request = Buffer.from(
    `GET ${url.href} HTTP/1.1\r\nHost: ${url.host}\r\nUser-Agent: ${HEADERS["user-agent"]}\r\nAccept: ${HEADERS.accept}\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n`,
    "latin1",
  );
  const pattern = new RegExp(`^HTTP/1\\.[01] 2\\d\\d [\\s\\S]*HTTP_USER_AGENT = ${HEADERS["user-agent"].replace(/[()]/g, "\\$&")}`);
  return (endpoint) =>
    new Promise<boolean>((resolve) => {
      let text = "";
      let settled = false;
      const socket = net.connect(endpoint.port, endpoint.host);
      const finish = (alive: boolean): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.destroy();
        resolve(alive);
      };
      const timer = setTimeout(() => finish(false), run.timeoutMs);
      socket.setEncoding("latin1");
      socket.on("connect", () => socket.write(request));
      socket.on("data", (chunk: string) => {
        text += chunk;
        if (text.length > JUDGE_BODY_LIMIT_BYTES) finish(pattern.test(text));
      });
      socket.on("end", () => finish(pattern.test(text)));
      socket.on("error", () => finish(false));
    });
}

/** got 14 through http-proxy-agent 7, as a checker built on them would: an agent per proxy, no retries, one timeout. */
function gotChecker(run: SideRun): Check {
  const pattern = new RegExp(`HTTP_USER_AGENT = ${HEADERS["user-agent"].replace(/[()]/g, "\\$&")}`);
  return async (endpoint) => {
    try {
      const response = await got(run.judgeUrl, {
        agent: { http: new HttpProxyAgent(`http://${endpoint.host}:${endpoint.port}`) },
        headers: HEADERS,
        timeout: { request: run.timeoutMs },
        retry: { limit: 0 },
        throwHttpErrors: false,
      });
      return response.statusCode >= 200 && response.statusCode < 300 && pattern.test(response.body);
    } catch {
      return false;
    }
  };
}

/** Roost's probe alone (labelled so): requestThroughProxy through the guard and the `default` judge match, no database. */
function roostProbeChecker(run: SideRun): Check {
  const guard = new OutboundGuard({ allowPrivateNetworkTargets: true });
  const matches = defaultJudgeMatcher(STANDARD_HEADERS, { ...HEADERS, host: new URL(run.judgeUrl).host });
  return async (endpoint) => {
    try {
      const response = await requestThroughProxy({
        proxy: { protocol: "http", host: endpoint.host, port: endpoint.port, username: "", password: "" },
        url: run.judgeUrl,
        guard,
        deadlineMs: run.timeoutMs,
        headers: HEADERS,
        maxBodyBytes: JUDGE_BODY_LIMIT_BYTES,
      });
      return response.status >= 200 && response.status < 300 && matches(response.body.toString("utf8"));
    } catch {
      return false;
    }
  };
}

/** `count` checks over the endpoint list in turn, `concurrency` at once; the number alive. */
async function checkMany(check: Check, endpoints: readonly FarmEndpoint[], count: number, concurrency: number, inFlight: { now: number }): Promise<number> {
  let next = 0;
  let alive = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      const endpoint = endpoints[index % endpoints.length];
      inFlight.now++;
      const ok = endpoint !== undefined && (await check(endpoint, index));
      inFlight.now--;
      if (ok) alive++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return alive;
}

interface Prepared {
  /** Runs `count` checks (Roost: whole batches, so a multiple of its batch size or the list) and gives the number alive. */
  run(count: number): Promise<number>;
  inFlight(): number;
  close(): Promise<void>;
}

const ROOST_BATCH_SIZE = 250;

/**
 * Roost's checker path as the service runs it: batches of 250 of one user's ids through runCheckBatch
 * (reads, probes, set-based writes), as many at once as its worker takes, probes capped by a ProbeLimiter.
 */
async function prepareRoost(run: SideRun): Promise<Prepared> {
  const db = createDatabase({ databaseUrl: run.databaseUrl, applicationName: "roost-bench-checker", maxConnections: 16 });
  await ensureStatisticsPartitions(db.pool);
  let alive = 0;
  const probes = new ProbeLimiter(run.concurrency, run.concurrency);
  const deps: CheckBatchDeps = {
    pool: db.pool,
    guard: new OutboundGuard({ allowPrivateNetworkTargets: true }),
    probes,
    logger: createLogger({ silent: true }),
    settings: () => ({ intervalSeconds: 3600, standardHeaders: STANDARD_HEADERS, proxyHeaders: ["VIA", "X-FORWARDED-FOR", "FORWARDED", "X-REAL-IP", "CLIENT-IP", "X-PROXY-ID"], saveResponses: true }),
    ownAddresses: () => ["127.0.0.1"],
    requestHeaders: HEADERS,
    observe: (_protocol, result) => {
      if (result === "alive") alive++;
    },
  };
  // As many batches at once as services/checker runs.
  const parallelBatches = batchesAtOnce(run.concurrency, ROOST_BATCH_SIZE);
  return {
    async run(count) {
      const batches: number[][] = [];
      for (let from = 0; from < count; from += ROOST_BATCH_SIZE) {
        const ids: number[] = [];
        for (let i = from; i < Math.min(count, from + ROOST_BATCH_SIZE); i++) ids.push(run.proxyIds[i % run.proxyIds.length] ?? 0);
        batches.push(ids);
      }
      alive = 0;
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < batches.length) {
          const ids = batches[next++] ?? [];
          // A batch lists each id once; a list shorter than a batch is checked in several.
          for (const unique of splitRepeats(ids)) await runCheckBatch(deps, run.userId, unique);
        }
      };
      await Promise.all(Array.from({ length: parallelBatches }, worker));
      return alive;
    },
    inFlight: () => probes.inFlight,
    close: () => db.close(),
  };
}

/** Splits a list into runs without a repeated element, keeping order. */
function splitRepeats(ids: readonly number[]): number[][] {
  const parts: number[][] = [[]];
  let seen = new Set<number>();
  for (const id of ids) {
    if (seen.has(id)) {
      parts.push([]);
      seen = new Set();
    }
    seen.add(id);
    parts[parts.length - 1]?.push(id);
  }
  return parts.filter((part) => part.length > 0);
}

async function prepare(run: SideRun): Promise<Prepared> {
  if (run.side === "roost") return prepareRoost(run);
  const check = run.side === "raw" ? rawChecker(run) : run.side === "got" ? gotChecker(run) : roostProbeChecker(run);
  const inFlight = { now: 0 };
  return { run: (count) => checkMany(check, run.endpoints, count, run.concurrency, inFlight), inFlight: () => inFlight.now, close: async () => undefined };
}

let prepared: { run: SideRun; side: Prepared } | null = null;

async function handle(request: SideRequest): Promise<SideMessage> {
  if (request.kind === "prepare") {
    const side = await prepare(request.run);
    await side.run(Math.min(request.run.warmupChecks, request.run.endpoints.length));
    prepared = { run: request.run, side };
    return { kind: "prepared" };
  }
  if (!prepared) throw new Error("go before prepare");
  const { run, side } = prepared;
  const checks = run.endpoints.length * run.passes;
  const rssBefore = process.memoryUsage.rss();
  let rssPeak = rssBefore;
  let inFlightSum = 0;
  let samples = 0;
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
    inFlightSum += side.inFlight();
    samples++;
  }, 20);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const alive = await side.run(checks);
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  clearInterval(sampler);
  rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
  // The database pool stays open: its backends must still be there when the benchmark reads PostgreSQL's CPU.
  return { kind: "done", result: { checks, alive, ms, cpuUs: cpu.user + cpu.system, rssBefore, rssPeak, meanInFlight: samples > 0 ? inFlightSum / samples : Number.NaN } };
}

process.on("disconnect", () => {
  void (prepared?.side.close() ?? Promise.resolve()).finally(() => process.exit(0));
});
process.on("message", (request: SideRequest) => {
  handle(request).then(
    (message) => process.send?.(message),
    (error: unknown) => process.send?.({ kind: "failed", message: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies SideMessage),
  );
});
