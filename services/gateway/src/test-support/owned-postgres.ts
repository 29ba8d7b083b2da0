import { chmod, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { migrate } from "@roost/db";
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from "@roost/embedded";
import { waitFor } from "@roost/testkit";

/**
 * A PostgreSQL owned by one test file (the embedded one, in a temporary data
 * directory, on a port of its own), migrated, so a test may freeze, stop and
 * restart it without touching the shared server. `close()` removes it.
 */
export interface OwnedPostgres {
  readonly databaseUrl: string;
  /** SIGSTOP to the postmaster and every backend: connections stay open, nothing answers. */
  pause(): Promise<void>;
  /** SIGCONT to the same processes. */
  resume(): Promise<void>;
  /** Fast shutdown; the URL stays valid for start(). */
  stop(): Promise<void>;
  /** SIGKILL to the postmaster and every backend, as a crash; start() recovers from the WAL. */
  kill(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

/** The postmaster's pid and its children's, from /proc. */
async function clusterPids(clusterDir: string): Promise<number[]> {
  const postmaster = Number((await readFile(path.join(clusterDir, "postmaster.pid"), "utf8")).split("\n")[0]);
  const pids = [postmaster];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (parent === postmaster) pids.push(Number(entry));
  }
  return pids;
}

export async function startOwnedPostgres(): Promise<OwnedPostgres> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "roost-owned-pg-"));
  // As root PostgreSQL runs as `postgres`, which must reach the directory.
  await chmod(dataDir, 0o755);
  let handle: EmbeddedPostgresHandle | null = await startEmbeddedPostgres({ dataDir });
  const databaseUrl = handle.databaseUrl;
  await migrate(databaseUrl);
  const clusterDir = path.join(dataDir, "postgres");
  let paused: number[] = [];

  const signalAll = (pids: number[], signal: NodeJS.Signals) => {
    for (const pid of pids) {
      try {
        process.kill(pid, signal);
      } catch {
        // Exited meanwhile.
      }
    }
  };
  const killOnExit = () => signalAll(paused, "SIGCONT");
  process.once("exit", killOnExit);

  return {
    databaseUrl,
    async pause() {
      paused = await clusterPids(clusterDir);
      signalAll(paused, "SIGSTOP");
    },
    async resume() {
      signalAll(paused, "SIGCONT");
      paused = [];
    },
    async stop() {
      await handle?.stop();
      handle = null;
    },
    async kill() {
      const pids = await clusterPids(clusterDir);
      signalAll(pids, "SIGKILL");
      const alive = (pid: number): boolean => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      await waitFor(() => !pids.some(alive), { timeoutMs: 10_000, what: "every PostgreSQL process to be gone" });
      // Finds the postmaster gone and only disarms its watchdog.
      await handle?.stop();
      handle = null;
    },
    async start() {
      if (handle) throw new Error("owned postgres already running");
      handle = await startEmbeddedPostgres({ dataDir });
    },
    async close() {
      process.off("exit", killOnExit);
      signalAll(paused, "SIGCONT");
      await handle?.stop();
      handle = null;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
