import { readFile, readlink } from "node:fs/promises";

import { waitUntil } from "./wait-until.js";

/** The `code` of a Node system error (`ENOENT`, `ESRCH`, ...), if it has one. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null || !("code" in error)) return undefined;
  return typeof error.code === "string" ? error.code : undefined;
}

/** What Linux `/proc` says about a process. */
export interface ProcessInfo {
  pid: number;
  parentPid: number;
  /** Executable name as the kernel reports it (`postgres`, `redis-server`, `node`). */
  command: string;
  /** Single-letter state; `Z` is a zombie. */
  state: string;
  /** Working directory, when we may read it. */
  cwd: string | undefined;
}

/**
 * Reads `/proc/<pid>`. Returns undefined when the process does not exist or
 * there is no procfs (non-Linux), so callers must treat undefined as "unknown".
 */
export async function readProcessInfo(pid: number): Promise<ProcessInfo | undefined> {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  let stat: string;
  try {
    stat = await readFile(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // "<pid> (<comm>) <state> <ppid> ...": comm may itself contain spaces and parentheses.
  const open = stat.indexOf("(");
  const close = stat.lastIndexOf(")");
  if (open < 0 || close < open) return undefined;
  const [state = "?", parentPid = "0"] = stat.slice(close + 2).split(" ");
  let cwd: string | undefined;
  try {
    cwd = await readlink(`/proc/${pid}/cwd`);
  } catch {
    cwd = undefined;
  }
  return { pid, parentPid: Number(parentPid), command: stat.slice(open + 1, close), state, cwd };
}

/** True while `pid` names a running (not zombie) process. */
export async function isProcessAlive(pid: number): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists but belongs to another user.
    if (errorCode(error) !== "EPERM") return false;
  }
  const info = await readProcessInfo(pid);
  return info?.state !== "Z";
}

/** Sends `signal`, ignoring "no such process". */
export function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch (error) {
    if (errorCode(error) !== "ESRCH") throw error;
  }
}

/**
 * Asks a process that is not our child to stop with `signal`, and kills it
 * when it has not exited after `graceMs`.
 * @returns true when it stopped on `signal`, false when it had to be killed.
 */
export async function terminateProcess(pid: number, signal: NodeJS.Signals, graceMs: number): Promise<boolean> {
  signalProcess(pid, signal);
  try {
    await waitUntil(async () => !(await isProcessAlive(pid)), { timeoutMs: graceMs, description: `pid ${pid} to exit` });
    return true;
  } catch {
    signalProcess(pid, "SIGKILL");
    await waitUntil(async () => !(await isProcessAlive(pid)), {
      timeoutMs: 10_000,
      description: `pid ${pid} to exit after SIGKILL`,
    });
    return false;
  }
}

/**
 * How many processes are attached to System V shared memory segment `shmid`
 * (0 when the segment is gone or procfs does not tell).
 */
export async function sysvSegmentAttachCount(shmid: number): Promise<number> {
  let table: string;
  try {
    table = await readFile("/proc/sysvipc/shm", "utf8");
  } catch {
    return 0;
  }
  // Columns: key shmid perms size cpid lpid nattch ...
  for (const line of table.split("\n").slice(1)) {
    const columns = line.trim().split(/\s+/);
    if (Number(columns[1]) === shmid) return Number(columns[6] ?? 0);
  }
  return 0;
}

/**
 * A server process found on our data directory belongs to a live owner when
 * its parent is a running Node.js process (another Roost, or this one). A
 * server whose owner died was re-parented to init or a subreaper: that is the
 * orphan of a crashed run.
 */
export async function hasLiveNodeParent(info: ProcessInfo): Promise<boolean> {
  if (info.parentPid <= 1) return false;
  const parent = await readProcessInfo(info.parentPid);
  return parent?.command === "node" || info.parentPid === process.pid;
}
