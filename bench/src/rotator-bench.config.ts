import { commonBenchConfig } from "./bench.config.js";
/**
 * What the rotator part of `npm run bench` reads: `--smoke` or BENCH_SMOKE=1 (seconds, every side,
 * one run), BENCH_DATABASE_URL and BENCH_REDIS_URL as the other parts read them, and
 * BENCH_ROTATOR_CPU_PROF=<dir> to run the rotator process with `--cpu-prof` into that folder.
 */
export interface RotatorBenchConfig {
  smoke: boolean;
  adminDatabaseUrl: string;
  redisUrl: string;
  /** Size of the origin's one file, bytes. */
  bodyBytes: number;
  /** Kept-alive client connections of the request load, one request in flight on each. */
  concurrency: number;
  /** Unmeasured load per side before its first round in a run, ms. */
  warmupMs: number;
  /** Measured load per side and round, ms. */
  roundMs: number;
  /** Rounds per run; the side order is reversed each round. */
  rounds: number;
  /** Latency at one offered load for every side: requests a second over `concurrency` connections, and for how long per side and round, ms. */
  pacedRate: number;
  pacedMs: number;
  /** Every figure is the median of this many runs. */
  runs: number;
  /** CONNECT transfer: tunnels at once, and bytes downloaded through each. */
  transferTunnels: number;
  transferBytes: number;
  /** Idle CONNECT tunnels held open through the rotator, and how many are being opened at once. */
  idleTunnels: number;
  openAtOnce: number;
  cpuProfileDir: string | undefined;
}

export function rotatorBenchConfigFrom(argv: readonly string[], env: Record<string, string | undefined>): RotatorBenchConfig {
  const common = commonBenchConfig(argv, env);
  const { smoke } = common;
  return {
    ...common,
    bodyBytes: 1024,
    concurrency: 64,
    warmupMs: smoke ? 200 : 1_500,
    roundMs: smoke ? 250 : 850,
    rounds: smoke ? 2 : 6,
    pacedRate: 2_000,
    pacedMs: smoke ? 150 : 500,
    runs: smoke ? 1 : 3,
    transferTunnels: 4,
    transferBytes: smoke ? 4 * 2 ** 20 : 64 * 2 ** 20,
    idleTunnels: smoke ? 200 : 5_000,
    openAtOnce: 100,
    cpuProfileDir: env.BENCH_ROTATOR_CPU_PROF || undefined,
  };
}

export function rotatorBenchConfigFromProcess(): RotatorBenchConfig {
  return rotatorBenchConfigFrom(process.argv.slice(2), process.env);
}
