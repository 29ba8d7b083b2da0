import { readdirSync, readFileSync } from "node:fs";

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

/**
 * CPU time (user and system, ms) used so far by every process named
 * `postgres` on this machine: the backends of both sides and PostgreSQL's
 * own workers, read from /proc/<pid>/stat (10 ms ticks). Null where /proc is
 * not there. Processes that exited between two readings are not counted.
 */
export function postgresCpuMs(): Map<number, number> | null {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return null;
  }
  const ticksPerMs = 1000 / CLOCK_TICKS_PER_SECOND;
  const used = new Map<number, number>();
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ..."; comm may hold spaces and parentheses, so split after the last ")".
    const commEnd = stat.lastIndexOf(")");
    if (stat.slice(stat.indexOf("(") + 1, commEnd) !== "postgres") continue;
    const fields = stat.slice(commEnd + 2).split(" ");
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after "state".
    used.set(Number(pid), (Number(fields[11]) + Number(fields[12])) * ticksPerMs);
  }
  return used;
}

/** PostgreSQL CPU ms between two readings of postgresCpuMs, counting processes present in both or started since. */
export function postgresCpuBetween(from: Map<number, number> | null, to: Map<number, number> | null): number | null {
  if (!from || !to) return null;
  let sum = 0;
  for (const [pid, ms] of to) sum += ms - (from.get(pid) ?? 0);
  return sum;
}

/** USER_HZ, the unit of /proc/<pid>/stat's times: 100 on x86 and arm64 Linux (getconf CLK_TCK). */
const CLOCK_TICKS_PER_SECOND = 100;
