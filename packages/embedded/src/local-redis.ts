import { type ChildProcess, spawn } from "node:child_process";
import { readFile, realpath, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join, resolve } from "node:path";

import { startChildWatchdog } from "./child-watchdog.js";
import { ensureDirectory } from "./data-directory.js";
import { type EmbeddedLogger, RecentOutput, silentLogger } from "./embedded-logger.js";
import { isLoopbackPortFree, pickFreeLoopbackPort } from "./loopback-port.js";
import {
  errorCode,
  hasLiveNodeParent,
  isProcessAlive,
  readProcessInfo,
  signalProcess,
  terminateProcess,
} from "./process-probe.js";
import { generatePassword, isPort, isRecord, readStateFile, writeStateFile } from "./state-file.js";
import { settlesWithin, waitUntil } from "./wait-until.js";

export interface LocalRedisOptions {
  /**
   * Roost's data directory (`DATA_DIR`). Redis keeps its files (append-only
   * log, snapshots, config, pid file) in `<dataDir>/redis`; its port and
   * password in `<dataDir>/redis.json` (mode 0600).
   */
  dataDir: string;
  /** Receives progress, warnings and (at debug level) Redis' own log lines. */
  logger?: EmbeddedLogger;
  /** Program to run, looked up on PATH. @defaultValue "redis-server" */
  redisServerCommand?: string;
  /** Longest Redis may take to answer PING (loading a large append-only file included). @defaultValue 60000 */
  startTimeoutMs?: number;
  /** Longest a clean shutdown may take before Redis is killed. @defaultValue 30000 */
  stopTimeoutMs?: number;
  /**
   * Redis' `maxmemory` in bytes, with policy `noeviction` (BullMQ must never
   * lose keys): past it writes fail instead of the host running out of memory.
   * @defaultValue 1073741824 (1 GiB)
   */
  maxMemoryBytes?: number;
}

/** Default `maxmemory` of the local Redis. */
export const LOCAL_REDIS_DEFAULT_MAX_MEMORY_BYTES = 1024 * 1024 * 1024;

export interface LocalRedisHandle {
  /** `redis://:<password>@127.0.0.1:<port>` */
  redisUrl: string;
  /** SIGTERM (Redis' clean shutdown: flushes the append-only file), waits for the exit; idempotent. */
  stop(): Promise<void>;
}

/** Printed when there is no redis-server to run. */
export const REDIS_SERVER_MISSING_MESSAGE =
  "redis-server was not found on PATH: install redis-server (Debian: apt-get install redis-server) or set REDIS_URL to an existing Redis";

interface RedisState {
  port: number;
  password: string;
}

function parseRedisState(value: unknown, path: string): RedisState | undefined {
  if (value === undefined) return undefined;
  if (isRecord(value) && isPort(value.port) && typeof value.password === "string" && value.password.length > 0) {
    return { port: value.port, password: value.password };
  }
  throw new Error(`${path} does not hold {port, password}; fix or remove it (a new port and password are then chosen)`);
}

/** A value for redis.conf, quoted so paths with spaces or quotes survive. */
function configString(value: string): string {
  return `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

function redisConfig(state: RedisState, redisDir: string, maxMemoryBytes: number): string {
  return [
    "# Written by Roost on every start; edits are lost.",
    "bind 127.0.0.1",
    `port ${state.port}`,
    "protected-mode yes",
    "daemonize no",
    `dir ${configString(redisDir)}`,
    `pidfile ${configString(join(redisDir, "redis-server.pid"))}`,
    // Logs go to stdout, which we read.
    'logfile ""',
    // Queues must survive a restart and a crash.
    "appendonly yes",
    "appendfsync everysec",
    `maxmemory ${maxMemoryBytes}`,
    "maxmemory-policy noeviction",
    // Kept in this 0600 file rather than on the command line, which every local user can read.
    `requirepass ${configString(state.password)}`,
    "",
  ].join("\n");
}

function encodeCommand(...parts: string[]): string {
  return `*${parts.length}\r\n${parts.map((part) => `$${Buffer.byteLength(part)}\r\n${part}\r\n`).join("")}`;
}

/**
 * One AUTH + PING round trip over a raw socket. True only for `+PONG`; false
 * for refused connections, `-LOADING`, a wrong password or a timeout.
 */
async function answersPing(port: number, password: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolvePing) => {
    const socket = connect({ host: "127.0.0.1", port });
    let received = "";
    const finish = (result: boolean): void => {
      socket.destroy();
      resolvePing(result);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once("error", () => finish(false));
    socket.once("close", () => finish(false));
    socket.once("connect", () => socket.write(encodeCommand("AUTH", password) + encodeCommand("PING")));
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("utf8");
      const replies = received.split("\r\n");
      // Two complete replies: AUTH's, then PING's.
      if (replies.length < 3) return;
      finish(replies[1] === "+PONG");
    });
  });
}

/**
 * Makes sure a Redis left by an earlier run cannot get in the way. A stale
 * pid file (dead pid, or a pid reused by another program) is removed; a Redis
 * still running in our directory is either owned by a live Node process
 * (another Roost on this DATA_DIR: refuse) or an orphan of a crashed run
 * (shut it down cleanly).
 */
async function clearLeftoverRedis(redisDir: string, stopTimeoutMs: number, logger: EmbeddedLogger): Promise<void> {
  const pidFile = join(redisDir, "redis-server.pid");
  let pid: number;
  try {
    pid = Number((await readFile(pidFile, "utf8")).trim());
  } catch (error) {
    if (errorCode(error) === "ENOENT") return;
    throw error;
  }
  if (await isProcessAlive(pid)) {
    const info = await readProcessInfo(pid);
    if (info?.command === "redis-server" && info.cwd === (await realpath(redisDir))) {
      if (await hasLiveNodeParent(info)) {
        throw new Error(
          `Redis is already running in ${redisDir} (pid ${pid}, started by pid ${info.parentPid}); is another Roost using the same DATA_DIR?`,
        );
      }
      logger.warn("stopping orphaned local Redis left by a crashed run", { pid, redisDir });
      await terminateProcess(pid, "SIGTERM", stopTimeoutMs);
    }
  }
  await rm(pidFile, { force: true });
}

interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

async function spawnRedis(command: string, configPath: string, redisDir: string): Promise<ChildProcess> {
  // Own process group: a Ctrl+C on the terminal reaches Roost, which then stops Redis in order.
  const child = spawn(command, [configPath], { cwd: redisDir, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  await new Promise<void>((resolveSpawn, rejectSpawn) => {
    child.once("spawn", () => resolveSpawn());
    child.once("error", (error) => {
      if (errorCode(error) === "ENOENT") rejectSpawn(new Error(REDIS_SERVER_MISSING_MESSAGE, { cause: error }));
      else rejectSpawn(new Error(`could not start ${command}: ${error.message}`, { cause: error }));
    });
  });
  return child;
}

/**
 * Starts `redis-server` as a child process for Roost's own use: loopback
 * only, on a port of its own chosen on first start and kept in
 * `<dataDir>/redis.json` (never 6379; re-chosen if another program took it),
 * with a random password, append-only persistence and its files in
 * `<dataDir>/redis`. Resolves once Redis answers PING. If this process dies
 * abruptly, a watchdog process shuts Redis down.
 * @throws when redis-server is missing, with a message that says how to get one.
 */
/**
 * The URL of the redis-server that `startLocalRedis` keeps under `dataDir`,
 * from its state file; undefined when none was ever started there.
 */
function redisUrl(port: number, password: string): string {
  return `redis://:${encodeURIComponent(password)}@127.0.0.1:${port}`;
}

export async function localRedisUrl(dataDir: string): Promise<string | undefined> {
  const statePath = join(dataDir, "redis.json");
  const state = parseRedisState(await readStateFile(statePath), statePath);
  return state ? redisUrl(state.port, state.password) : undefined;
}

export async function startLocalRedis(options: LocalRedisOptions): Promise<LocalRedisHandle> {
  const logger = options.logger ?? silentLogger;
  const command = options.redisServerCommand ?? "redis-server";
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const stopTimeoutMs = options.stopTimeoutMs ?? 30_000;
  const maxMemoryBytes = options.maxMemoryBytes ?? LOCAL_REDIS_DEFAULT_MAX_MEMORY_BYTES;
  if (!Number.isSafeInteger(maxMemoryBytes) || maxMemoryBytes < 1) throw new Error(`maxMemoryBytes must be a positive integer, got ${maxMemoryBytes}`);
  const dataDir = resolve(options.dataDir);
  const redisDir = join(dataDir, "redis");
  const statePath = join(dataDir, "redis.json");

  await ensureDirectory(dataDir, 0o755);
  // Only Roost reads Redis' files.
  await ensureDirectory(redisDir, 0o700);

  let state = parseRedisState(await readStateFile(statePath), statePath);
  if (state === undefined) {
    state = { port: await pickFreeLoopbackPort(), password: generatePassword() };
    await writeStateFile(statePath, state);
  }
  await clearLeftoverRedis(redisDir, stopTimeoutMs, logger);
  if (!(await isLoopbackPortFree(state.port))) {
    const port = await pickFreeLoopbackPort();
    logger.warn("local Redis port is taken by another program; moving to a new port", { previousPort: state.port, port });
    state = { ...state, port };
    await writeStateFile(statePath, state);
  }

  const { port, password } = state;
  const configPath = join(redisDir, "redis.conf");
  await writeFile(configPath, redisConfig(state, redisDir, maxMemoryBytes), { mode: 0o600 });

  const child = await spawnRedis(command, configPath, redisDir);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${command}: no pid`);
  const recentOutput = new RecentOutput();
  const onOutput = (chunk: Buffer): void => {
    for (const line of recentOutput.push(chunk.toString("utf8"))) {
      // Redis logs its start banner at warning level too, so judge by the words.
      if (/warning|error|fail|can't|cannot|unable|denied|fatal|oom/i.test(line)) logger.warn("local Redis reported a problem", { line });
      else logger.debug?.("local Redis output", { line });
    }
  };
  child.stdout?.on("data", onOutput);
  child.stderr?.on("data", onOutput);

  let exit: ChildExit | undefined;
  let stopping: Promise<void> | undefined;
  const exited = new Promise<ChildExit>((resolveExit) => {
    child.once("exit", (code, signal) => {
      exit = { code, signal };
      if (stopping === undefined) logger.error("local Redis exited unexpectedly", { pid, code, signal });
      resolveExit(exit);
    });
  });
  const watchdog = startChildWatchdog({ targetPid: pid, signal: "SIGTERM", graceMs: stopTimeoutMs });

  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      watchdog.disarm();
      if (exit !== undefined) return;
      child.kill("SIGTERM");
      if (!(await settlesWithin(exited, stopTimeoutMs))) {
        logger.error("local Redis did not stop in time; killing it", { pid, stopTimeoutMs });
        // The whole group: a background save or rewrite child too.
        signalProcess(-pid, "SIGKILL");
        await exited;
      }
      logger.info("local Redis stopped", { pid });
    })();
    return stopping;
  };

  try {
    await waitUntil(
      async () => {
        if (exit !== undefined) {
          throw new Error(`redis-server exited during startup (code ${exit.code}, signal ${exit.signal}); its last output:\n${recentOutput.toString()}`);
        }
        return answersPing(port, password, 1_000);
      },
      { timeoutMs: startTimeoutMs, description: `local Redis on 127.0.0.1:${port} to answer PING` },
    );
  } catch (error) {
    await stop();
    throw error;
  }

  logger.info("local Redis started", { port, pid, redisDir });
  return { redisUrl: redisUrl(port, password), stop };
}
