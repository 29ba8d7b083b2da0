import { type ChildProcess, spawn } from "node:child_process";

import { childWatchdogCommand, startChildWatchdog } from "./child-watchdog.js";
import { findWatchdogPids } from "./owner-process.fixture.js";
import { isProcessAlive, signalProcess } from "./process-probe.js";
import { waitUntil } from "./wait-until.js";

const spawned: ChildProcess[] = [];

afterEach(() => {
  for (const child of spawned.splice(0)) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) signalProcess(-child.pid, "SIGKILL");
  }
});

interface Target {
  pid: number;
  exit: Promise<NodeJS.Signals | null>;
}

/** A long-running stand-in for a server, in its own process group. */
async function startTarget(ignoreSigterm = false): Promise<Target> {
  const script = ignoreSigterm
    ? 'process.on("SIGTERM", () => {}); process.stdout.write("ready\\n"); setInterval(() => {}, 1 << 30);'
    : 'process.stdout.write("ready\\n"); setInterval(() => {}, 1 << 30);';
  const child = spawn(process.execPath, ["-e", script], { detached: true, stdio: ["ignore", "pipe", "ignore"] });
  spawned.push(child);
  const exit = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  await waitUntil(() => output.includes("ready"), { timeoutMs: 10_000, description: "the target to start" });
  if (child.pid === undefined) throw new Error("target has no pid");
  return { pid: child.pid, exit };
}

/** An owner process that starts a watchdog for `targetPid` and idles until killed. */
async function startOwner(targetPid: number, signal: NodeJS.Signals, graceMs: number): Promise<ChildProcess> {
  const { command, args } = childWatchdogCommand({ targetPid, signal, graceMs });
  const script = [
    'const { spawn } = require("node:child_process");',
    "const [command, args] = JSON.parse(process.argv[1]);",
    'const watchdog = spawn(command, args, { detached: true, stdio: ["pipe", "ignore", "ignore"] });',
    "watchdog.unref();",
    "setInterval(() => {}, 1 << 30);",
  ].join("\n");
  const owner = spawn(process.execPath, ["-e", script, JSON.stringify([command, args])], { detached: true, stdio: "ignore" });
  spawned.push(owner);
  await waitUntil(async () => (await findWatchdogPids(targetPid)).length === 1, {
    timeoutMs: 10_000,
    description: "the watchdog to start",
  });
  return owner;
}

describe("child watchdog", () => {
  test("stops the target with the clean signal when the owner is killed", async () => {
    const target = await startTarget();
    const owner = await startOwner(target.pid, "SIGTERM", 10_000);
    owner.kill("SIGKILL");
    await expect(target.exit).resolves.toBe("SIGTERM");
    await waitUntil(async () => (await findWatchdogPids(target.pid)).length === 0, {
      timeoutMs: 10_000,
      description: "the watchdog to exit",
    });
  });

  test("kills a target that ignores the clean signal once the grace period is over", async () => {
    const target = await startTarget(true);
    const owner = await startOwner(target.pid, "SIGTERM", 300);
    owner.kill("SIGKILL");
    await expect(target.exit).resolves.toBe("SIGKILL");
  });

  test("disarm stops the watchdog and leaves the target running", async () => {
    const target = await startTarget();
    const watchdog = startChildWatchdog({ targetPid: target.pid, signal: "SIGTERM", graceMs: 1_000 });
    await waitUntil(async () => (await findWatchdogPids(target.pid)).length === 1, {
      timeoutMs: 10_000,
      description: "the watchdog to start",
    });
    watchdog.disarm();
    await waitUntil(async () => (await findWatchdogPids(target.pid)).length === 0, {
      timeoutMs: 10_000,
      description: "the watchdog to exit",
    });
    expect(await isProcessAlive(target.pid)).toBe(true);
  });

  test("exits on its own when the target is gone", async () => {
    const target = await startTarget();
    startChildWatchdog({ targetPid: target.pid, signal: "SIGTERM", graceMs: 1_000 });
    await waitUntil(async () => (await findWatchdogPids(target.pid)).length === 1, {
      timeoutMs: 10_000,
      description: "the watchdog to start",
    });
    signalProcess(target.pid, "SIGKILL");
    await target.exit;
    await waitUntil(async () => (await findWatchdogPids(target.pid)).length === 0, {
      timeoutMs: 10_000,
      description: "the watchdog to exit",
    });
  });
});
