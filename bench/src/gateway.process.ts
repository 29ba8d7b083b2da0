import { randomBytes } from "node:crypto";
import { PerformanceObserver, constants, monitorEventLoopDelay, performance } from "node:perf_hooks";
import { createDatabase } from "@roost/db";
import { createLogger, createMetrics } from "@roost/observability";
import { buildGatewayDeps, createGatewayService, gatewayConfigFromEnv } from "@roost/service-gateway";

/**
 * The gateway under test, in a child process of the benchmark: its own
 * event loop and its own V8 flags (the gateway's, scripts/service-node-flags.mjs, or none),
 * as in a deployment where clients are other processes, so the load
 * generator's HTTP work does not queue behind the gateway's (or the other
 * way round) and the load generator runs with Node's defaults. Built exactly
 * as main.ts builds it. Talks to the benchmark over the IPC channel of fork().
 */
export interface GatewayProcessData {
  databaseUrl: string;
  redisUrl: string;
  queuePrefix: string;
  dataDir: string;
}

/** What the gateway's thread did during a measured window: V8 pauses and event-loop delay. */
export interface GatewayWindow {
  gcPauses: number;
  gcMs: number;
  gcMaxMs: number;
  /** Of the pauses, those of a full (mark-compact) collection or its incremental marking: the rest are scavenges. */
  gcMajorPauses: number;
  loopDelayMaxMs: number;
  /**
   * The gateway's own time for each request of the window, in ms, as its
   * request-duration metric saw it (from the handler taking the request to
   * the response handed to the socket): beside the load generator's times
   * it tells the handler's tail from the HTTP hop's.
   */
  handlerMs: number[];
  /** CPU time (user and system) of the gateway process during the window, ms. */
  cpuMs: number;
  /** Resident memory of the gateway process at the window's end, and its peak so far, bytes. */
  rssBytes: number;
  maxRssBytes: number;
  /** Filled in by the load generator: the longest delay of its own event loop during the window. */
  clientLoopDelayMaxMs?: number;
}

export type GatewayProcessRequest = { kind: "start"; data: GatewayProcessData } | { kind: "window-start" } | { kind: "window-end" } | { kind: "stop" };

export type GatewayProcessMessage =
  | { kind: "listening"; port: number }
  | { kind: "window"; window: GatewayWindow }
  | { kind: "stopped" }
  | { kind: "failed"; message: string };

function send(message: GatewayProcessMessage): void {
  if (!process.send) throw new Error("gateway.process must be started with fork()");
  process.send(message);
}

async function run(data: GatewayProcessData): Promise<void> {
  const config = gatewayConfigFromEnv({
    DATABASE_URL: data.databaseUrl,
    REDIS_URL: data.redisUrl,
    QUEUE_PREFIX: data.queuePrefix,
    DATA_DIR: data.dataDir,
    JWT_SECRET: randomBytes(32).toString("hex"),
    HOST: "127.0.0.1",
    PORT: "0",
    PASSWORD_HASH_MEMORY_KIB: "1024",
    PASSWORD_HASH_TIME_COST: "1",
  });
  const db = createDatabase({ databaseUrl: data.databaseUrl, applicationName: "roost-bench-gateway" });
  const { deps, close } = await buildGatewayDeps(config, {
    db,
    redisUrl: data.redisUrl,
    logger: createLogger({ silent: true }),
    metrics: createMetrics({ defaultMetrics: false }),
    build: { buildVersion: "bench", builtAt: new Date().toISOString() },
    instanceId: "bench",
  });
  // Every route observes this histogram once per request; a copy of each value goes to the window.
  const handlerMs: number[] = [];
  let measuring = false;
  type Observe = (labels: Partial<Record<"method" | "route" | "status", string>>, seconds: number) => void;
  const durations = deps.metrics.httpRequestDurationSeconds as unknown as { observe: Observe };
  const observe: Observe = durations.observe.bind(durations);
  durations.observe = (labels, seconds) => {
    if (measuring) handlerMs.push(seconds * 1000);
    observe(labels, seconds);
  };
  const gateway = createGatewayService(deps);
  const address = await gateway.start();
  send({ kind: "listening", port: address.port });
  let windowStart = Number.POSITIVE_INFINITY;
  let cpuAtStart = process.cpuUsage();
  let gc = { gcPauses: 0, gcMs: 0, gcMaxMs: 0, gcMajorPauses: 0 };
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.startTime < windowStart) continue;
      gc.gcPauses++;
      gc.gcMs += entry.duration;
      gc.gcMaxMs = Math.max(gc.gcMaxMs, entry.duration);
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind ?? 0;
      if ((kind & (constants.NODE_PERFORMANCE_GC_MAJOR | constants.NODE_PERFORMANCE_GC_INCREMENTAL)) !== 0) gc.gcMajorPauses++;
    }
  });
  gcObserver.observe({ entryTypes: ["gc"] });
  // A 10 ms timer (the default is 10 too): a finer one would cost the gateway thread CPU while it is measured.
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  process.on("message", (request: GatewayProcessRequest) => {
    if (request.kind === "window-start") {
      windowStart = performance.now();
      gc = { gcPauses: 0, gcMs: 0, gcMaxMs: 0, gcMajorPauses: 0 };
      handlerMs.length = 0;
      measuring = true;
      cpuAtStart = process.cpuUsage();
      loopDelay.reset();
      loopDelay.enable();
      return;
    }
    if (request.kind === "start") return;
    if (request.kind === "window-end") {
      loopDelay.disable();
      measuring = false;
      const cpu = process.cpuUsage(cpuAtStart);
      const cpuMs = (cpu.user + cpu.system) / 1000;
      // GC entries are delivered asynchronously: let the observer's queue drain first.
      setImmediate(() => {
        windowStart = Number.POSITIVE_INFINITY;
        const memory = { rssBytes: process.memoryUsage.rss(), maxRssBytes: process.resourceUsage().maxRSS * 1024 };
        send({ kind: "window", window: { ...gc, loopDelayMaxMs: loopDelay.max / 1e6, handlerMs: [...handlerMs], cpuMs, ...memory } });
      });
      return;
    }
    gcObserver.disconnect();
    void (async () => {
      await gateway.stop(2_000);
      // Every key of this run (rate limits, revocations, BullMQ queues) lives under the prefix.
      let cursor = "0";
      do {
        const [next, keys] = await deps.redis.scan(cursor, "MATCH", `${data.queuePrefix}:*`, "COUNT", 1000);
        cursor = next;
        if (keys.length > 0) await deps.redis.del(...keys);
      } while (cursor !== "0");
      await close();
      await db.close();
      send({ kind: "stopped" });
      process.disconnect();
    })();
  });
}

// Started detached (its own session), so the terminal's Ctrl-C reaches only the benchmark: when the
// benchmark is gone, so is the IPC channel, and the gateway goes too. (After a normal stop it has
// disconnected itself and is exiting anyway.)
process.once("disconnect", () => process.exit(0));

process.once("message", (request: GatewayProcessRequest) => {
  if (request.kind !== "start") return;
  run(request.data).catch((error: unknown) => {
    send({ kind: "failed", message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  });
});
