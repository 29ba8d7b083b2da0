import { spawn } from "node:child_process";
import { Socket } from "node:net";

/**
 * A tiny Node process that stops a server when its owner dies abruptly
 * (SIGKILL, OOM kill, crash), which Node cannot observe from inside. The owner
 * holds the write end of the watchdog's stdin; the kernel closes it when the
 * owner dies, the watchdog reads end-of-file, signals the server, waits up to
 * the grace period and then SIGKILLs it. It exits on its own once the server
 * is gone (a zombie counts as gone: init may reap late), and ignores terminal
 * signals (it runs in its own session anyway).
 * The marker comment lets tests and operators recognise it in `ps`.
 */
const WATCHDOG_SCRIPT = `// roost-child-watchdog
"use strict";
const targetPid = Number(process.argv[1]);
const signal = process.argv[2];
const graceMs = Number(process.argv[3]);
const isZombie = () => {
  try {
    const stat = require("node:fs").readFileSync("/proc/" + targetPid + "/stat", "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch { return false; }
};
const isAlive = () => {
  try { process.kill(targetPid, 0); } catch (error) { if (error.code !== "EPERM") return false; }
  return !isZombie();
};
process.on("SIGINT", () => {});
process.on("SIGHUP", () => {});
setInterval(() => { if (!isAlive()) process.exit(0); }, 1000);
let fired = false;
const ownerGone = () => {
  if (fired) return;
  fired = true;
  if (!isAlive()) process.exit(0);
  try { process.kill(targetPid, signal); } catch {}
  const deadline = Date.now() + graceMs;
  setInterval(() => {
    if (!isAlive()) process.exit(0);
    if (Date.now() > deadline) {
      try { process.kill(targetPid, "SIGKILL"); } catch {}
      process.exit(0);
    }
  }, 100);
};
process.stdin.on("data", () => {});
process.stdin.on("end", ownerGone);
process.stdin.on("close", ownerGone);
process.stdin.on("error", ownerGone);
process.stdin.resume();
`;

export interface ChildWatchdogOptions {
  /** The server process to stop when the owner dies. */
  targetPid: number;
  /** First signal sent to the server (its clean-shutdown signal). */
  signal: NodeJS.Signals;
  /** How long the server may take to stop before it is killed. */
  graceMs: number;
}

/** Command line of the watchdog; exported so tests can start one from a throwaway owner. */
export function childWatchdogCommand(options: ChildWatchdogOptions): { command: string; args: string[] } {
  return {
    command: process.execPath,
    args: ["-e", WATCHDOG_SCRIPT, String(options.targetPid), options.signal, String(options.graceMs)],
  };
}

export interface ChildWatchdog {
  /** Stops the watchdog without touching the server (normal shutdown path). */
  disarm(): void;
}

/**
 * Starts a watchdog for `targetPid` owned by the current process. It does not
 * keep the owner's event loop alive.
 */
export function startChildWatchdog(options: ChildWatchdogOptions): ChildWatchdog {
  const { command, args } = childWatchdogCommand(options);
  const child = spawn(command, args, { detached: true, stdio: ["pipe", "ignore", "ignore"] });
  // A watchdog that fails to start costs only the abrupt-death cleanup; never crash the owner for it.
  child.on("error", () => undefined);
  child.stdin.on("error", () => undefined);
  if (child.stdin instanceof Socket) child.stdin.unref();
  child.unref();
  return {
    disarm: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
  };
}
