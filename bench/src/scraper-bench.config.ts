import { commonBenchConfig } from "./bench.config.js";

/** What the scraper part of `npm run bench` reads: `--smoke` or BENCH_SMOKE=1 (64 KiB bodies, about a second). */
export interface ScraperBenchConfig {
  smoke: boolean;
  /** Size of each generated body, bytes. */
  bodyBytes: number;
  /** Passes of each side per run, the side order rotating pass by pass. */
  passes: number;
  /** Every figure is the median of this many runs. */
  runs: number;
}

export function scraperBenchConfigFrom(argv: readonly string[], env: Record<string, string | undefined>): ScraperBenchConfig {
  const { smoke } = commonBenchConfig(argv, env);
  return { smoke, bodyBytes: smoke ? 64 * 1024 : 5 * 1024 * 1024, passes: smoke ? 2 : 5, runs: 3 };
}

export function scraperBenchConfigFromProcess(): ScraperBenchConfig {
  return scraperBenchConfigFrom(process.argv.slice(2), process.env);
}
