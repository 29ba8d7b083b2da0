/**
 * What `npm run bench` reads from its command line and environment (the only
 * place the benchmark touches process.env).
 *
 * - `--smoke` or BENCH_SMOKE=1: a small run (20k proxies, few requests) that
 *   finishes in well under a minute; CI runs it to keep the harness working.
 * - BENCH_DATABASE_URL: an admin connection to the PostgreSQL server the
 *   benchmark creates (and drops) its own database on;
 *   postgresql://postgres@127.0.0.1:5432/postgres.
 * - BENCH_REDIS_URL: Redis for the gateway, used under a prefix of its own
 *   that is deleted at the end; redis://127.0.0.1:6379.
 * - `--v8-flags=on|off|both` or BENCH_V8_FLAGS: gateways with the gateway's V8
 *   flags (on, default) or without (off); both adds an A/B of them
 *   (docs/benchmarks.md, Method).
 * - BENCH_GATEWAY_CPU_PROF=<dir>: the list and upload gateway runs with
 *   `--cpu-prof` into that folder (the profile is written when it exits).
 */
export type V8FlagsMode = "on" | "off" | "both";
const V8_FLAG_MODES: readonly V8FlagsMode[] = ["on", "off", "both"];

export interface BenchConfig {
  smoke: boolean;
  adminDatabaseUrl: string;
  redisUrl: string;
  /** Proxies seeded for the list and export user. */
  proxies: number;
  /** Lines of the upload. */
  uploadLines: number;
  /** Concurrent clients of the list scenarios. */
  concurrency: number;
  /** Measured requests per scenario and side (API or SQL), at least. */
  requests: number;
  /**
   * Rounds each scenario is measured in, API and SQL alternating, so that
   * background load hits both sides alike.
   */
  rounds: number;
  /**
   * Time one side of one round keeps measuring, at least, once its share of
   * `requests` is done: a cheap page's 2,000 requests take well under half a
   * second, too short a window for a stable p99 (docs/benchmarks.md, Method).
   */
  minRoundMs: number;
  /** Upper bound on one side of one scenario, milliseconds. */
  maxScenarioMs: number;
  /** Unmeasured requests per scenario and side before measuring. */
  warmupRequests: number;
  /**
   * Unmeasured requests per side before the first list scenario, of every
   * scenario in turn: V8 optimises the gateway's and the clients' code over
   * the first few thousand requests (docs/benchmarks.md, Method).
   */
  jitWarmupRequests: number;
  v8Flags: V8FlagsMode;
  /** How long the mailer and maintenance worker run before their RSS counts as idle, at least, ms. */
  idleMs: number;
  gatewayCpuProfileDir: string | undefined;
}

function v8FlagsMode(argv: readonly string[], env: Record<string, string | undefined>): V8FlagsMode {
  const fromArgv = argv.find((arg) => arg.startsWith("--v8-flags="))?.slice("--v8-flags=".length);
  const value = fromArgv ?? env.BENCH_V8_FLAGS ?? "on";
  const mode = V8_FLAG_MODES.find((m) => m === value);
  if (!mode) throw new Error(`--v8-flags must be one of ${V8_FLAG_MODES.join(", ")}, got "${value}"`);
  return mode;
}

/** What every part reads alike: smoke mode and the servers' admin URLs. */
export function commonBenchConfig(argv: readonly string[], env: Record<string, string | undefined>): { smoke: boolean; adminDatabaseUrl: string; redisUrl: string } {
  return {
    smoke: argv.includes("--smoke") || env.BENCH_SMOKE === "1" || env.BENCH_SMOKE === "true",
    adminDatabaseUrl: env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres",
    redisUrl: env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379",
  };
}

export function benchConfigFrom(argv: readonly string[], env: Record<string, string | undefined>): BenchConfig {
  const common = commonBenchConfig(argv, env);
  const { smoke } = common;
  return {
    ...common,
    proxies: smoke ? 20_000 : 1_000_000,
    uploadLines: smoke ? 20_000 : 400_000,
    concurrency: 16,
    requests: smoke ? 64 : 2_000,
    rounds: smoke ? 2 : 8,
    minRoundMs: smoke ? 0 : 500,
    maxScenarioMs: smoke ? 4_000 : 30_000,
    warmupRequests: smoke ? 16 : 64,
    jitWarmupRequests: smoke ? 64 : 3_000,
    v8Flags: v8FlagsMode(argv, env),
    idleMs: smoke ? 2_000 : 10_000,
    gatewayCpuProfileDir: env.BENCH_GATEWAY_CPU_PROF || undefined,
  };
}

export function benchConfigFromProcess(): BenchConfig {
  return benchConfigFrom(process.argv.slice(2), process.env);
}
