import { randomBytes } from "node:crypto";
import os from "node:os";
import { Redis } from "ioredis";
import type pg from "pg";
import { runCheckTick } from "@roost/checking";
import { createDatabase, runLongStatement, type Database } from "@roost/db";
import { createUnknownGeoDatabase } from "@roost/geo";
import { ingest } from "@roost/inventory";
import { createLogger, createMetrics } from "@roost/observability";
import { checkQueue, createProducer, createRedisConnection } from "@roost/queue";
import { checkerConfigFromEnv, createCheckerService } from "@roost/service-checker";
import { checkerBenchConfigFromProcess, type CheckerBenchConfig } from "./checker-bench.config.js";
import type { CheckerSide, SideMessage, SideRequest, SideResult, SideRun } from "./checker-side.process.js";
import { forkIpcChild, type IpcChild } from "./child-process.js";
import { createBenchDatabase } from "./bench-database.js";
import { deleteKeys } from "./redis-keys.js";
import { cpuTimes, postgresCpuBetween, postgresCpuMs } from "./host.js";
import { finishReport, load, out, runPart, type Verdict } from "./report.js";
import type { FarmEndpoint, FarmMessage, FarmRequest } from "./proxy-farm.process.js";

/**
 * `npm run bench -- --part=checker`: Roost's checker beside a raw-socket checker and got + http-proxy-agent
 * on one fake-proxy farm, an upload's delay to every proxy checked, Redis with 1M due (docs/benchmarks.md).
 */

const TARGETS = {
  /** Roost's checks/s over the raw-socket checker's, http protocol. */
  roostOverRaw: 0.6,
  /** Every proxy of an upload of `aliveEndpoints` checked within, s. */
  endToEndSec: 60,
  /** Memory of the check queue's keys with 1M due proxies, bytes: a bounded number of batches, whatever the list size. */
  queueMemoryBytes: 1024 * 1024,
};

/** Side order of the first run; each next run starts one side later, so no side always runs first or last. */
const SIDES: readonly CheckerSide[] = ["raw", "roost", "got", "roost-probes"];
const SIDE_LABELS: Record<CheckerSide, string> = {
  raw: "raw socket",
  roost: "Roost (runCheckBatch)",
  "roost-probes": "Roost probes only",
  got: "got + http-proxy-agent",
};

/** The check queue's bound in the Redis part: the checker's default CHECKER_MAX_QUEUED_BATCHES. */
const MAX_QUEUED_BATCHES = 16;
const BATCH_SIZE = 250;

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;
const signedKib = (bytes: number): string => `${bytes >= 0 ? "+" : ""}${kib(bytes)}`;


interface Farm {
  alive: FarmEndpoint[];
  slow: FarmEndpoint[];
  dead: FarmEndpoint[];
  judgeUrl: string;
  cpuUs(): Promise<number>;
  stop(): Promise<void>;
}

async function startFarm(config: CheckerBenchConfig): Promise<Farm> {
  const child: IpcChild<FarmRequest, FarmMessage> = forkIpcChild(new URL("./proxy-farm.process.js", import.meta.url));
  const layout = {
    alive: config.aliveEndpoints,
    slow: config.slowEndpoints,
    slowMs: config.slowMs,
    dead: config.deadEndpoints,
    portsPerAddress: 250,
    lifetimeMs: 30 * 60_000,
  };
  const ready = await child.ask({ kind: "start", layout });
  if (ready.kind !== "ready") {
    await child.stop();
    throw new Error(`farm: ${ready.kind === "failed" ? ready.message : ready.kind}`);
  }
  return {
    alive: ready.alive,
    slow: ready.slow,
    dead: ready.dead,
    judgeUrl: `http://${ready.judge.host}:${ready.judge.port}/azenv.php`,
    async cpuUs() {
      const usage = await child.ask({ kind: "usage" });
      if (usage.kind !== "usage") throw new Error(`farm answered ${usage.kind}`);
      return usage.cpuUs;
    },
    stop: () => child.stop(),
  };
}

/** A user with only the http protocol enabled, the farm's judge, `timeoutMs` and no retries. */
async function newCheckUser(pool: pg.Pool, judgeUrl: string, timeoutMs: number): Promise<number> {
  const { rows } = await pool.query<{ id: number }>(
    "INSERT INTO users (email, password_hash) VALUES ('checker-bench-' || gen_random_uuid() || '@example.com', 'x') RETURNING id",
  );
  const userId = rows[0]?.id;
  if (userId === undefined) throw new Error("no user");
  await pool.query(
    `INSERT INTO user_settings (user_id, http_protocol, https_protocol, socks4_protocol, socks5_protocol, timeout_ms, retries, use_https_for_socks,
                                proxy_list_columns, scrape_source_proxy_columns, scrape_source_list_columns)
     VALUES ($1, true, false, false, false, $2, 0, false, '{}', '{}', '{}')`,
    [userId, timeoutMs],
  );
  await pool.query("INSERT INTO user_judges (user_id, url, regex, position) VALUES ($1, $2, 'default', 0)", [userId, judgeUrl]);
  return userId;
}

/** A fixed shuffle (the same in every run and for every side), so slow and dead endpoints are spread over the list. */
function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  let seed = 12345;
  for (let i = copy.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    const j = seed % (i + 1);
    const a = copy[i];
    const b = copy[j];
    if (a === undefined || b === undefined) continue;
    copy[i] = b;
    copy[j] = a;
  }
  return copy;
}

interface MeasuredRun extends SideResult {
  side: CheckerSide;
  farmCpuUs: number;
  postgresCpuMs: number | null;
}

/** One side in a fresh process: prepared and warmed up, then measured with the farm's and PostgreSQL's CPU. */
async function measureSide(run: SideRun, farm: Farm): Promise<MeasuredRun> {
  const child: IpcChild<SideRequest, SideMessage> = forkIpcChild(new URL("./checker-side.process.js", import.meta.url));
  try {
    const prepared = await child.ask({ kind: "prepare", run });
    if (prepared.kind !== "prepared") throw new Error(`${run.side}: ${prepared.kind === "failed" ? prepared.message : prepared.kind}`);
    const farmBefore = await farm.cpuUs();
    const postgresBefore = postgresCpuMs();
    const done = await child.ask({ kind: "go" });
    const postgres = postgresCpuBetween(postgresBefore, postgresCpuMs());
    const farmCpuUs = (await farm.cpuUs()) - farmBefore;
    if (done.kind !== "done") throw new Error(`${run.side}: ${done.kind === "failed" ? done.message : done.kind}`);
    return { ...done.result, side: run.side, farmCpuUs, postgresCpuMs: postgres };
  } finally {
    await child.stop();
  }
}

async function throughput(config: CheckerBenchConfig, farm: Farm, database: Database, databaseUrl: string, verdicts: Verdict[], problems: string[]): Promise<void> {
  const endpoints = shuffled([...farm.alive, ...farm.slow, ...farm.dead]);
  const userId = await newCheckUser(database.pool, farm.judgeUrl, config.timeoutMs);
  const { rows } = await database.pool.query<{ id: number }>(
    `INSERT INTO proxies (user_id, ip, port, next_check_at)
     SELECT $1, e.ip, e.port, now() + interval '1 day' FROM unnest($2::text[], $3::int[]) WITH ORDINALITY AS e(ip, port, n) ORDER BY e.n RETURNING id`,
    [userId, endpoints.map((e) => e.host), endpoints.map((e) => e.port)],
  );
  const proxyIds = rows.map((r) => r.id);
  const byAddress = new Map((await database.pool.query<{ id: number; key: string }>("SELECT id, ip || ':' || port AS key FROM proxies WHERE user_id = $1", [userId])).rows.map((r) => [r.key, r.id]));
  const orderedIds = endpoints.map((e) => byAddress.get(`${e.host}:${e.port}`) ?? 0);
  if (orderedIds.some((id, i) => id !== proxyIds[i])) problems.push("throughput: proxy ids not in the list's order (checked by address instead)");
  const checks = endpoints.length * config.passes;
  const expectedAlive = (farm.alive.length + farm.slow.length) * config.passes;
  out(
    `Checks/s, http protocol, ${config.concurrency} checks at once, ${checks.toLocaleString("en")} checks per side and run ` +
      `(${farm.alive.length.toLocaleString("en")} alive, ${farm.slow.length} slow (${config.slowMs} ms), ${farm.dead.length.toLocaleString("en")} refusing endpoints ` +
      `on ${new Set(endpoints.map((e) => e.host)).size} loopback addresses, ${config.passes} pass${config.passes > 1 ? "es" : ""}; timeout ${config.timeoutMs} ms, no retries), ` +
      `each side in a fresh process, sides alternating, ${config.runs} runs:`,
  );
  const results = new Map<CheckerSide, MeasuredRun[]>(SIDES.map((side) => [side, []]));
  const runLines: string[] = [];
  for (let run = 0; run < config.runs; run++) {
    const order = SIDES.map((_, i) => SIDES[(i + run) % SIDES.length]).filter((side): side is CheckerSide => side !== undefined);
    const line: string[] = [];
    for (const side of order) {
      const measured = await measureSide(
        { side, endpoints, proxyIds: orderedIds, databaseUrl, userId, judgeUrl: farm.judgeUrl, concurrency: config.concurrency, timeoutMs: config.timeoutMs, passes: config.passes, warmupChecks: config.warmupChecks },
        farm,
      );
      if (measured.alive !== expectedAlive) problems.push(`throughput run ${run + 1}, ${SIDE_LABELS[side]}: ${measured.alive} alive checks, expected ${expectedAlive}`);
      results.get(side)?.push(measured);
      line.push(`${SIDE_LABELS[side]} ${Math.round((measured.checks * 1000) / measured.ms)}`);
    }
    runLines.push(`  run ${run + 1} (load average ${load()}): ${line.join(", ")}`);
  }
  out(
    `${"side".padEnd(24)}${"checks/s".padStart(10)}${"checker µs".padStart(12)}${"farm µs".padStart(10)}${"PG µs".padStart(8)}` +
      `${"RSS/in-flight".padStart(15)}${"in flight".padStart(11)}${"alive".padStart(9)}   (CPU per check; medians)`,
  );
  const rate = (r: MeasuredRun): number => (r.checks * 1000) / r.ms;
  const medians = new Map<CheckerSide, number>();
  for (const side of SIDES) {
    const runs = results.get(side) ?? [];
    const checksPerSec = median(runs.map(rate));
    medians.set(side, checksPerSec);
    const pg = runs.every((r) => r.postgresCpuMs !== null) ? Math.round(median(runs.map((r) => ((r.postgresCpuMs ?? 0) * 1000) / r.checks))).toString() : "n/a";
    out(
      `${SIDE_LABELS[side].padEnd(24)}${Math.round(checksPerSec).toString().padStart(10)}` +
        `${Math.round(median(runs.map((r) => r.cpuUs / r.checks))).toString().padStart(12)}` +
        `${Math.round(median(runs.map((r) => r.farmCpuUs / r.checks))).toString().padStart(10)}${pg.padStart(8)}` +
        `${kib(median(runs.map((r) => (r.rssPeak - r.rssBefore) / config.concurrency))).padStart(15)}` +
        `${Math.round(median(runs.map((r) => r.meanInFlight))).toString().padStart(11)}` +
        `${median(runs.map((r) => r.alive)).toString().padStart(9)}`,
    );
  }
  for (const line of runLines) out(line);
  const ratio = (medians.get("roost") ?? 0) / (medians.get("raw") ?? Number.NaN);
  verdicts.push({ target: `Roost checks/s >= ${TARGETS.roostOverRaw} x raw socket (http)`, measured: `${ratio.toFixed(2)} x`, pass: ratio >= TARGETS.roostOverRaw });
  const probes = (medians.get("roost-probes") ?? 0) / (medians.get("raw") ?? Number.NaN);
  out(`  Roost over raw socket: ${ratio.toFixed(2)} x with the database writes, ${probes.toFixed(2)} x probes only; got + http-proxy-agent ${((medians.get("got") ?? 0) / (medians.get("raw") ?? Number.NaN)).toFixed(2)} x`);
}

/** Upload to the checker service's first check of every proxy, three times, each a new user uploading the farm's alive endpoints. */
async function endToEnd(config: CheckerBenchConfig, farm: Farm, database: Database, verdicts: Verdict[], problems: string[]): Promise<void> {
  const prefix = `roost-bench-${randomBytes(4).toString("hex")}`;
  await database.pool.query(
    `INSERT INTO global_config (id, config) VALUES (1, $1::jsonb) ON CONFLICT (id) DO UPDATE SET config = EXCLUDED.config`,
    [JSON.stringify({ checker: { judges: [{ url: farm.judgeUrl, regex: "default" }], ip_lookup: "", concurrency: config.concurrency } })],
  );
  const logger = createLogger({ silent: true });
  const checker = createCheckerService({
    config: checkerConfigFromEnv({ QUEUE_PREFIX: prefix, ALLOW_PRIVATE_NETWORK_TARGETS: "true" }),
    db: database,
    redisUrl: config.redisUrl,
    logger,
    metrics: createMetrics({ defaultMetrics: false }),
  });
  const connection = createRedisConnection(config.redisUrl, "producer");
  const checks = createProducer(checkQueue, { connection, prefix });
  const lines = farm.alive.map((e) => `${e.host}:${e.port}`).join("\n");
  out(`Upload to every proxy checked: ${farm.alive.length.toLocaleString("en")} new alive proxies (ingest from @roost/inventory), one checker service (createCheckerService, concurrency ${config.concurrency}) on the same database and Redis:`);
  const seconds: number[] = [];
  try {
    await checker.start();
    for (let run = 0; run < config.runs; run++) {
      const userId = await newCheckUser(database.pool, farm.judgeUrl, config.timeoutMs);
      const started = performance.now();
      const outcome = await ingest({ pool: database.pool, geo: createUnknownGeoDatabase(), checks, logger, allowPrivateTargets: true }, userId, lines, { maxProxies: null });
      const stored = performance.now() - started;
      if (outcome.newProxyIds.length !== farm.alive.length) problems.push(`end to end run ${run + 1}: ${outcome.newProxyIds.length} proxies stored, expected ${farm.alive.length}`);
      let left = -1;
      while (performance.now() - started < config.endToEndLimitMs) {
        const { rows } = await database.pool.query<{ left: number; alive: number }>(
          "SELECT count(*) FILTER (WHERE latest_check IS NULL)::int AS left, count(*) FILTER (WHERE alive)::int AS alive FROM proxies WHERE user_id = $1",
          [userId],
        );
        left = rows[0]?.left ?? -1;
        if (left === 0) {
          if ((rows[0]?.alive ?? 0) !== farm.alive.length) problems.push(`end to end run ${run + 1}: ${rows[0]?.alive ?? 0} proxies alive, expected ${farm.alive.length}`);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const total = (performance.now() - started) / 1000;
      seconds.push(left === 0 ? total : Number.POSITIVE_INFINITY);
      out(`  run ${run + 1}: ${left === 0 ? `${total.toFixed(1)} s` : `${left} still unchecked after ${total.toFixed(0)} s`} (ingest ${(stored / 1000).toFixed(1)} s of it; load average ${load()})`);
    }
  } finally {
    await checker.stop();
    await checks.close();
    connection.disconnect();
    await deleteKeys(config.redisUrl, prefix);
  }
  const mid = median(seconds);
  verdicts.push({ target: `${farm.alive.length.toLocaleString("en")} new proxies all checked <= ${TARGETS.endToEndSec} s`, measured: `${mid.toFixed(1)} s`, pass: mid <= TARGETS.endToEndSec });
}

/** Bytes Redis reports for every key under `prefix:` (MEMORY USAGE, all samples). */
async function prefixMemory(redis: Redis, prefix: string): Promise<{ keys: number; bytes: number }> {
  let cursor = "0";
  let keys = 0;
  let bytes = 0;
  do {
    const [next, found] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
    cursor = next;
    for (const key of found) {
      keys++;
      bytes += Number((await redis.call("MEMORY", "USAGE", key, "SAMPLES", "0")) ?? 0);
    }
  } while (cursor !== "0");
  return { keys, bytes };
}

const usedMemory = async (redis: Redis): Promise<number> => Number(/used_memory:(\d+)/.exec(await redis.info("memory"))?.[1] ?? Number.NaN);

/** 1M due proxies, scheduler ticks with no checker consuming: the queue stays at its bound, Redis memory with it. */
async function redisMemory(config: CheckerBenchConfig, database: Database, verdicts: Verdict[]): Promise<void> {
  const { rows } = await database.pool.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ('checker-bench-due-' || gen_random_uuid() || '@example.com', 'x') RETURNING id");
  const userId = rows[0]?.id;
  if (userId === undefined) throw new Error("no user");
  const seeded = performance.now();
  // Distinct public-looking addresses that nothing dials (no checker runs in this part), all due a minute ago.
  // The seed and its VACUUM can pass the pool's 8 s statement timeout on a busy host: the long-statement deadline.
  await runLongStatement(
    database.pool,
    `INSERT INTO proxies (user_id, ip, port, next_check_at)
     SELECT $1, '45.' || ((g >> 16) & 255) || '.' || ((g >> 8) & 255) || '.' || (g & 255), 8080, now() - interval '1 minute'
       FROM generate_series(0, $2::int - 1) AS g`,
    [userId, config.dueProxies],
  );
  await runLongStatement(database.pool, "VACUUM ANALYZE proxies");
  out(
    `Redis with ${config.dueProxies.toLocaleString("en")} due proxies (seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s), ` +
      `${config.ticks} scheduler ticks (runCheckTick, batches of ${BATCH_SIZE}, bound ${MAX_QUEUED_BATCHES}) per run and no checker, a new queue prefix per run:`,
  );
  const redis = new Redis(config.redisUrl);
  const runs: { bytes: number; used: number; waiting: number }[] = [];
  try {
    for (let run = 0; run < config.runs; run++) {
      const prefix = `roost-bench-${randomBytes(4).toString("hex")}`;
      const connection = createRedisConnection(config.redisUrl, "producer");
      const checks = createProducer(checkQueue, { connection, prefix });
      try {
        const before = await usedMemory(redis);
        const tickMs: number[] = [];
        for (let tick = 0; tick < config.ticks; tick++) {
          const started = performance.now();
          await runCheckTick({ pool: database.pool, checks, logger: createLogger({ silent: true }) }, { maxQueuedBatches: MAX_QUEUED_BATCHES, batchSize: BATCH_SIZE });
          tickMs.push(performance.now() - started);
        }
        const used = (await usedMemory(redis)) - before;
        const waiting = await checks.queue.getJobCountByTypes("wait", "prioritized", "paused");
        const memory = await prefixMemory(redis, prefix);
        const { rows: due } = await database.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM proxies WHERE user_id = $1 AND next_check_at <= now()", [userId]);
        runs.push({ bytes: memory.bytes, used, waiting });
        out(
          `  run ${run + 1}: ${waiting} batches waiting, ${memory.keys} keys under the prefix ${kib(memory.bytes)} (MEMORY USAGE), used_memory ${signedKib(used)} ` +
            `(INFO memory, the whole shared server); still due ${(due[0]?.n ?? 0).toLocaleString("en")}; the first tick (it claims the ${MAX_QUEUED_BATCHES} batches) ${(tickMs[0] ?? 0).toFixed(0)} ms`,
        );
      } finally {
        await checks.close();
        connection.disconnect();
        await deleteKeys(config.redisUrl, prefix);
      }
    }
  } finally {
    redis.disconnect();
  }
  const bytes = median(runs.map((r) => r.bytes));
  const waiting = median(runs.map((r) => r.waiting));
  verdicts.push({ target: `queue at its bound (${MAX_QUEUED_BATCHES} batches) with ${config.dueProxies.toLocaleString("en")} due`, measured: `${waiting} batches`, pass: runs.every((r) => r.waiting === MAX_QUEUED_BATCHES) });
  verdicts.push({ target: `check queue's Redis memory <= ${kib(TARGETS.queueMemoryBytes)}`, measured: `${kib(bytes)} (used_memory ${signedKib(median(runs.map((r) => r.used)))})`, pass: bytes <= TARGETS.queueMemoryBytes });
}

async function main(config: CheckerBenchConfig): Promise<number> {
  const started = Date.now();
  const verdicts: Verdict[] = [];
  const problems: string[] = [];
  out(`Roost checker benchmark${config.smoke ? " (smoke)" : ""}`);
  out(`node ${process.version}, ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, load average ${load()} (other work on the machine skews every number)`);
  const steal = cpuTimes();
  const benchDatabase = await createBenchDatabase(config.adminDatabaseUrl);
  const database = createDatabase({ databaseUrl: benchDatabase.url, applicationName: "roost-bench" });
  let farm: Farm | null = null;
  try {
    farm = await startFarm(config);
    out(`farm: a child process, ${farm.alive.length + farm.slow.length} listeners and ${farm.dead.length} refusing ports on 127.0.1.x, judge ${farm.judgeUrl}`);
    out();
    await throughput(config, farm, database, benchDatabase.url, verdicts, problems);
    out();
    await endToEnd(config, farm, database, verdicts, problems);
    out();
    await redisMemory(config, database, verdicts);
  } finally {
    await farm?.stop();
    await database.close();
    await benchDatabase.drop();
  }
  return finishReport({ verdicts, problems, smoke: config.smoke, smokeReason: "sizes too small to judge", targetWidth: 56, startedAt: started, steal });
}

runPart("checker", () => main(checkerBenchConfigFromProcess()));
