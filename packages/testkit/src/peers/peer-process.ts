import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

import { waitForPort } from "../wait-for.js";

/** Where Debian puts daemons; a non-login PATH often lacks the sbin folders. */
const EXTRA_BIN_DIRS = ["/usr/sbin", "/sbin", "/usr/local/sbin"];

/** Absolute path of an executable on PATH (or an sbin folder), or null. */
export function findPeerBinary(name: string): string | null {
  const dirs = [...(process.env.PATH ?? "").split(delimiter), ...EXTRA_BIN_DIRS];
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * True when every binary is installed. Missing ones are reported; under
 * CI=true a missing binary throws, so a forgotten apt step cannot make the
 * suite green by skipping.
 */
export function peerBinariesAvailable(...names: string[]): boolean {
  const missing = names.filter((name) => findPeerBinary(name) === null);
  if (missing.length === 0) return true;
  const message = `test peers missing: ${missing.join(", ")} (apt-get install tinyproxy squid dante-server microsocks nginx-light)`;
  if (process.env.CI === "true") throw new Error(message);
  console.warn(`${message}; skipping the tests that need them`);
  return false;
}

/** Resolves the binary or throws with the install hint. */
export function requirePeerBinary(name: string): string {
  const path = findPeerBinary(name);
  if (!path) throw new Error(`test peer binary ${name} not found on PATH`);
  return path;
}

export interface PeerDir {
  path: string;
  remove(): Promise<void>;
}

/** A temp dir daemons can write after dropping privileges (squid → proxy, nginx → nobody). */
export async function makePeerDir(prefix: string): Promise<PeerDir> {
  const path = await mkdtemp(join(tmpdir(), `roost-${prefix}-`));
  await chmod(path, 0o777);
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

export interface PeerProcessOptions {
  /** Shown in errors. */
  name: string;
  command: string;
  args: readonly string[];
  cwd?: string;
  /** The port that accepts once the peer is ready. */
  port: number;
  host?: string;
  /** @defaultValue 10000 */
  readyTimeoutMs?: number;
}

export interface PeerProcess {
  readonly pid: number;
  /** Recent stdout and stderr, for failure messages. */
  output(): string;
  /** Kills the peer's whole process group (helpers and forks included) and waits for the leader; idempotent. */
  stop(): Promise<void>;
}

const OUTPUT_KEEP_CHARS = 8192;

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is already gone
  }
}

/**
 * Starts a daemon in the foreground in its own process group and resolves
 * once its port accepts; rejects with its output if it exits first or the
 * port does not open in time.
 */
export async function startPeerProcess(options: PeerProcessOptions): Promise<PeerProcess> {
  const host = options.host ?? "127.0.0.1";
  const child = spawn(options.command, options.args, { cwd: options.cwd, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString("utf8")).slice(-OUTPUT_KEEP_CHARS);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const spawned = new Promise<number>((resolve, reject) => {
    child.once("spawn", () => resolve(child.pid ?? 0));
    child.once("error", reject);
  });
  const pid = await spawned;
  let stopping: Promise<void> | undefined;
  const peer: PeerProcess = {
    pid,
    output: () => output,
    stop() {
      // Test peers hold nothing worth a graceful shutdown: the whole group goes at once.
      stopping ??= (async () => {
        killGroup(pid, "SIGKILL");
        await exited(child);
      })();
      return stopping;
    },
  };
  const died = exited(child).then(() => {
    throw new Error(`${options.name} exited (code ${child.exitCode ?? child.signalCode}) before ${host}:${options.port} accepted:\n${output}`);
  });
  try {
    await Promise.race([waitForPort(options.port, host, options.readyTimeoutMs ?? 10_000), died]);
  } catch (error) {
    await peer.stop();
    throw error instanceof Error && error.message.startsWith("timed out") ? new Error(`${error.message}\n${options.name} output:\n${output}`) : error;
  }
  died.catch(() => undefined);
  return peer;
}
