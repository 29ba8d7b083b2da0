import { commonBenchConfig } from "./bench.config.js";
/**
 * What the checker part of `npm run bench` reads: `--smoke` or BENCH_SMOKE=1 (seconds, every side),
 * BENCH_DATABASE_URL and BENCH_REDIS_URL as the inventory part reads them (bench.config.ts).
 */
export interface CheckerBenchConfig {
  smoke: boolean;
  adminDatabaseUrl: string;
  redisUrl: string;
  /** Farm endpoints that answer at once; also the end-to-end upload's size. */
  aliveEndpoints: number;
  /** Endpoints that answer after `slowMs`. */
  slowEndpoints: number;
  slowMs: number;
  /** Ports that refuse connections. */
  deadEndpoints: number;
  /** Checks in flight on every side (the global config's default `checker.concurrency`). */
  concurrency: number;
  /** Each side checks the farm's whole list this many times per run. */
  passes: number;
  /** Deadline of one check, ms (every side). */
  timeoutMs: number;
  /** Unmeasured checks per side and run before its measured ones. */
  warmupChecks: number;
  /** Every figure is the median of this many runs, sides alternating. */
  runs: number;
  /** Due proxies seeded for the Redis memory part. */
  dueProxies: number;
  /** Scheduler ticks per Redis memory run. */
  ticks: number;
  /** How long the end-to-end part waits for every proxy to be checked before it calls the run failed, ms. */
  endToEndLimitMs: number;
}

export function checkerBenchConfigFrom(argv: readonly string[], env: Record<string, string | undefined>): CheckerBenchConfig {
  const common = commonBenchConfig(argv, env);
  const { smoke } = common;
  return {
    ...common,
    aliveEndpoints: smoke ? 300 : 10_000,
    slowEndpoints: smoke ? 20 : 500,
    slowMs: 250,
    deadEndpoints: smoke ? 40 : 1_000,
    concurrency: smoke ? 64 : 512,
    passes: smoke ? 1 : 2,
    timeoutMs: 3_000,
    warmupChecks: smoke ? 100 : 2_000,
    runs: 3,
    dueProxies: smoke ? 20_000 : 1_000_000,
    ticks: 5,
    endToEndLimitMs: smoke ? 30_000 : 120_000,
  };
}

export function checkerBenchConfigFromProcess(): CheckerBenchConfig {
  return checkerBenchConfigFrom(process.argv.slice(2), process.env);
}
