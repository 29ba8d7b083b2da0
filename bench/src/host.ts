import { readFileSync } from "node:fs";

/**
 * CPU time the hypervisor gave to other guests while this machine's vCPUs
 * wanted to run ("steal", the eighth field of /proc/stat's cpu line). On a
 * shared virtual machine it is the part of "other work on the machine" no
 * process list shows, and it moves every number of a run.
 */
export interface CpuTimes {
  steal: number;
  total: number;
}

/** Cumulative jiffies of all CPUs, or null where /proc/stat is not there. */
export function cpuTimes(): CpuTimes | null {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "";
    const fields = line.trim().split(/\s+/).slice(1, 9).map(Number);
    if (fields.length < 8 || fields.some((n) => !Number.isFinite(n))) return null;
    return { steal: fields[7] ?? 0, total: fields.reduce((a, b) => a + b, 0) };
  } catch {
    return null;
  }
}

/** Stolen share of CPU time between two readings, as "4.1%", or "n/a". */
export function stolenShare(from: CpuTimes | null, to: CpuTimes | null): string {
  if (!from || !to || to.total <= from.total) return "n/a";
  return `${(((to.steal - from.steal) * 100) / (to.total - from.total)).toFixed(1)}%`;
}
