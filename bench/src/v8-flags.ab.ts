import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import type { GatewayWindow } from "./gateway.process.js";
import { mergeSamples, percentile, runLoad, type KeepAliveGetClient, type Samples } from "./load.js";
import type { ListScenario } from "./list-scenarios.js";

/**
 * `--v8-flags=both`: the gateway's V8 flags against none in one run, on the list
 * pages (a gateway per variant) and on an idle mailer and maintenance worker.
 */

export interface FlagVariant {
  label: string;
  flags: readonly string[];
  pages: KeepAliveGetClient;
  observe<T>(work: () => Promise<T>): Promise<{ result: T; window: GatewayWindow }>;
}

export interface RoundShape {
  concurrency: number;
  requests: number;
  rounds: number;
  minRoundMs: number;
  maxScenarioMs: number;
}

const mib = (bytes: number): string => `${Math.round(bytes / 2 ** 20)} MiB`;
const ms = (value: number): string => (Number.isNaN(value) ? "n/a" : `${value.toFixed(1)} ms`);

interface VariantTotals {
  parts: Samples[];
  elapsedMs: number;
  lastWindow?: GatewayWindow;
}

/**
 * Each scenario in `shape.rounds` rounds, both variants per round, the order swapped each
 * round; prints p99 and pages/s per scenario and variant, then each gateway's RSS.
 */
export async function listFlagsAB(
  variants: readonly [FlagVariant, FlagVariant],
  scenarios: readonly ListScenario[],
  shape: RoundShape,
  out: (line?: string) => void,
): Promise<string[]> {
  const problems: string[] = [];
  const perRound = {
    concurrency: shape.concurrency,
    requests: Math.ceil(shape.requests / shape.rounds),
    minMs: shape.minRoundMs,
    maxMs: shape.maxScenarioMs / shape.rounds,
  };
  const [a, b] = variants;
  const all = new Map<FlagVariant, VariantTotals>(variants.map((v) => [v, { parts: [], elapsedMs: 0 }]));
  out(`${"scenario".padEnd(28)}${`${a.label} p99`.padStart(16)}${`${b.label} p99`.padStart(16)}${`${a.label} pages/s`.padStart(18)}${`${b.label} pages/s`.padStart(18)}`);
  const row = (label: string, totals: Map<FlagVariant, VariantTotals>): void => {
    const cells = variants.map((variant) => {
      const t = totals.get(variant) ?? { parts: [], elapsedMs: 0 };
      const merged = mergeSamples(t.parts);
      return { p99: percentile(merged.latenciesMs, 99), rate: t.elapsedMs > 0 ? (merged.latenciesMs.length * 1000) / t.elapsedMs : 0 };
    });
    out(
      `${label.padEnd(28)}${ms(cells[0]?.p99 ?? Number.NaN).padStart(16)}${ms(cells[1]?.p99 ?? Number.NaN).padStart(16)}` +
        `${Math.round(cells[0]?.rate ?? 0).toString().padStart(18)}${Math.round(cells[1]?.rate ?? 0).toString().padStart(18)}`,
    );
  };
  for (const scenario of scenarios) {
    const totals = new Map<FlagVariant, VariantTotals>(variants.map((v) => [v, { parts: [], elapsedMs: 0 }]));
    for (let round = 0; round < shape.rounds; round++) {
      for (const variant of round % 2 === 0 ? [a, b] : [b, a]) {
        const call = async (i: number): Promise<void> => {
          const res = await variant.pages.get(scenario.apiPath(i));
          if (res.status !== 200) throw new Error(`${scenario.apiPath(i)} answered ${res.status}`);
        };
        const started = performance.now();
        const { result, window } = await variant.observe(() => runLoad(perRound, call));
        const elapsedMs = performance.now() - started;
        for (const t of [totals.get(variant), all.get(variant)]) {
          if (!t) continue;
          t.parts.push(result);
          t.elapsedMs += elapsedMs;
          t.lastWindow = window;
        }
        if (result.errors > 0) problems.push(`V8 A/B ${scenario.name} (${variant.label}): ${result.errors} errors (${result.firstError})`);
      }
    }
    row(scenario.name, totals);
  }
  row("all scenarios", all);
  for (const variant of variants) {
    const window = all.get(variant)?.lastWindow;
    if (window) out(`  gateway ${variant.label} (${variant.flags.join(" ") || "no flags"}): RSS ${mib(window.rssBytes)} at the end, peak ${mib(window.maxRssBytes)}`);
  }
  return problems;
}

export interface IdleServices {
  databaseUrl: string;
  redisUrl: string;
  queuePrefix: string;
  flags: readonly string[];
  /** How long a service runs before its RSS counts as idle, at least, ms. */
  idleMs: number;
  /** `services/<name>/dist/main.js` for a service name. */
  entry: (service: "mailer" | "maintenance") => string;
}

async function rssBytes(pid: number): Promise<number | null> {
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  return kib === undefined ? null : Number(kib) * 1024;
}

/**
 * RSS of an idle mailer and maintenance worker, each started with and without the flags
 * (idle: up for `idleMs`, RSS within 2% over 2 s); each must then exit 0 on SIGTERM.
 */
export async function idleServicesRss(options: IdleServices, out: (line?: string) => void): Promise<string[]> {
  const problems: string[] = [];
  const env = {
    PATH: process.env.PATH ?? "",
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: options.redisUrl,
    QUEUE_PREFIX: options.queuePrefix,
    LOG_LEVEL: "warn",
    // The outbox is empty: the mailer needs these to start, never connects.
    SMTP_HOST: "127.0.0.1",
    MAIL_FROM_ADDRESS: "bench@example.com",
    PUBLIC_APP_URL: "http://127.0.0.1",
  };
  const runs = (["mailer", "maintenance"] as const).flatMap((service) =>
    [options.flags, []].map((flags) => {
      const child = spawn(process.execPath, [...flags, options.entry(service)], { env, stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? "?")));
      return { service, flags, child, exited, stderr: () => stderr, startedAt: performance.now() };
    }),
  );
  const steadyWindowMs = 2_000;
  const giveUpMs = options.idleMs + 20_000;
  const measured = await Promise.all(
    runs.map(async (run) => {
      const samples: { at: number; rss: number }[] = [];
      for (;;) {
        const rss = run.child.pid === undefined ? null : await rssBytes(run.child.pid);
        const at = performance.now() - run.startedAt;
        if (rss === null || run.child.exitCode !== null) return { run, rss: null, steady: false };
        samples.push({ at, rss });
        const recent = samples.filter((s) => s.at >= at - steadyWindowMs).map((s) => s.rss);
        const steady = at >= options.idleMs && samples[0] !== undefined && samples[0].at <= at - steadyWindowMs && Math.max(...recent) <= Math.min(...recent) * 1.02;
        if (steady || at >= giveUpMs) return { run, rss, steady };
        await sleep(250);
      }
    }),
  );
  out(`${"idle service".padEnd(28)}${"flags".padStart(16)}${"no flags".padStart(16)}`);
  for (const service of ["mailer", "maintenance"] as const) {
    const cell = (withFlags: boolean): string => {
      const m = measured.find((x) => x.run.service === service && x.run.flags.length > 0 === withFlags);
      if (!m || m.rss === null) return "exited";
      return `${mib(m.rss)}${m.steady ? "" : " (unsteady)"}`;
    };
    out(`${service.padEnd(28)}${cell(true).padStart(16)}${cell(false).padStart(16)}`);
  }
  for (const run of runs) {
    if (run.child.exitCode === null) run.child.kill("SIGTERM");
    const code = await run.exited;
    const label = `${run.service} (${run.flags.length > 0 ? "flags" : "no flags"})`;
    if (code !== 0) problems.push(`${label} exited ${code} after SIGTERM: ${run.stderr().trim().slice(0, 300)}`);
  }
  return problems;
}
