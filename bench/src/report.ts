import os from "node:os";
import { cpuTimes, stolenShare, type CpuTimes } from "./host.js";

/** One target of a part: what it asks, what was measured, whether it holds. */
export interface Verdict {
  target: string;
  measured: string;
  pass: boolean;
}

export const out = (line = ""): void => {
  process.stdout.write(`${line}\n`);
};

/** The host's load average, 1, 5 and 15 minutes. */
export const load = (): string =>
  os
    .loadavg()
    .map((n) => n.toFixed(2))
    .join(" ");

/**
 * Prints a part's targets, problems and closing line, and gives its exit code:
 * 1 on any problem, or on a missed target outside a smoke run.
 */
export function finishReport(report: {
  verdicts: readonly Verdict[];
  problems: readonly string[];
  smoke: boolean;
  /** Why a smoke run's verdicts say nothing, e.g. "sizes too small to judge". */
  smokeReason: string;
  targetWidth: number;
  startedAt: number;
  steal: CpuTimes | null;
}): number {
  out();
  out(`Targets${report.smoke ? ` (smoke run: ${report.smokeReason}, informational)` : ""}:`);
  for (const v of report.verdicts) out(`  ${v.pass ? "PASS" : "FAIL"}  ${v.target.padEnd(report.targetWidth)} ${v.measured}`);
  for (const problem of report.problems) out(`  ERROR ${problem}`);
  out();
  out(
    `finished in ${((Date.now() - report.startedAt) / 1000).toFixed(1)} s, load average ${load()}; ` +
      `CPU taken by the hypervisor for other guests (steal): ${stolenShare(report.steal, cpuTimes())}`,
  );
  if (report.problems.length > 0) return 1;
  return !report.smoke && report.verdicts.some((v) => !v.pass) ? 1 : 0;
}

/** Runs a part's main and sets the exit code; a throw prints its stack under the part's name. */
export function runPart(name: string, main: () => Promise<number> | number): void {
  Promise.resolve()
    .then(main)
    .then(
      (code) => {
        process.exitCode = code;
      },
      (error: unknown) => {
        process.stderr.write(`${name} benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
        process.exitCode = 1;
      },
    );
}
