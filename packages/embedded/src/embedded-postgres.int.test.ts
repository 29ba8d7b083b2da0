import { chmod, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

import pg from "pg";

import type { EmbeddedLogger } from "./embedded-logger.js";
import { type EmbeddedPostgresHandle, embeddedSharedBuffersMiB, startEmbeddedPostgres } from "./embedded-postgres.js";
import { type CompiledPackage, compilePackage, findWatchdogPids, startOwnerProcess } from "./owner-process.fixture.js";
import { isProcessAlive, signalProcess } from "./process-probe.js";
import { waitUntil } from "./wait-until.js";

const cleanups: Array<() => Promise<unknown>> = [];
const dataDirs: string[] = [];
let compiled: CompiledPackage | undefined;

async function makeDataDir(): Promise<string> {
  const dataDir = await mkdtemp(join(tmpdir(), "roost-embedded-pg-"));
  // mkdtemp gives 0700; as root, PostgreSQL runs as user postgres and must traverse it.
  await chmod(dataDir, 0o755);
  dataDirs.push(dataDir);
  return dataDir;
}

function recordingLogger(): EmbeddedLogger & { messages: string[] } {
  const messages: string[] = [];
  const record = (message: string): void => {
    messages.push(message);
  };
  return { messages, info: record, warn: record, error: record };
}

async function start(dataDir: string, logger?: EmbeddedLogger): Promise<EmbeddedPostgresHandle> {
  const handle = await startEmbeddedPostgres({ dataDir, logger });
  cleanups.push(() => handle.stop());
  return handle;
}

async function query(databaseUrl: string, sql: string): Promise<Array<Record<string, unknown>>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<Record<string, unknown>>(sql)).rows;
  } finally {
    await client.end();
  }
}

async function postmasterPid(dataDir: string): Promise<number> {
  return Number((await readFile(join(dataDir, "postgres", "postmaster.pid"), "utf8")).split("\n")[0]);
}

async function waitForExit(pid: number, timeoutMs = 30_000): Promise<void> {
  await waitUntil(async () => !(await isProcessAlive(pid)), { timeoutMs, description: `pid ${pid} to exit` });
}

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  // Whatever a failed test left running.
  for (const dataDir of dataDirs) {
    const pid = await postmasterPid(dataDir).catch(() => 0);
    if (await isProcessAlive(pid)) {
      for (const watchdog of await findWatchdogPids(pid)) signalProcess(watchdog, "SIGKILL");
      signalProcess(pid, "SIGKILL");
    }
    await rm(dataDir, { recursive: true, force: true });
  }
  await compiled?.remove();
});

describe("embeddedSharedBuffersMiB", () => {
  test("is an eighth of the memory, never below PostgreSQL's default 128 MiB nor above 2 GiB", () => {
    expect(embeddedSharedBuffersMiB(512 * 2 ** 20)).toBe(128);
    expect(embeddedSharedBuffersMiB(4 * 2 ** 30)).toBe(512);
    expect(embeddedSharedBuffersMiB(24 * 2 ** 30)).toBe(2048);
  });
});

describe("startEmbeddedPostgres", () => {
  test("serves database roost on loopback, keeps port, password and data across restarts", async () => {
    const signalListenersBefore = ["SIGINT", "SIGTERM", "SIGHUP"].map((signal) => process.listenerCount(signal));
    const dataDir = await makeDataDir();
    const first = await start(dataDir);

    const url = new URL(first.databaseUrl);
    expect(url.protocol).toBe("postgresql:");
    expect(url.hostname).toBe("127.0.0.1");
    expect(url.port).not.toBe("5432");
    expect(url.username).toBe("postgres");
    expect(url.password.length).toBeGreaterThanOrEqual(32);
    expect(url.pathname).toBe("/roost");

    expect(await query(first.databaseUrl, "select 1 as one")).toEqual([{ one: 1 }]);
    expect(await query(first.databaseUrl, "show listen_addresses")).toEqual([{ listen_addresses: "127.0.0.1" }]);
    expect(await query(first.databaseUrl, "show unix_socket_directories")).toEqual([{ unix_socket_directories: "" }]);
    expect(await query(first.databaseUrl, "show server_encoding")).toEqual([{ server_encoding: "UTF8" }]);
    const buffers = embeddedSharedBuffersMiB();
    expect(await query(first.databaseUrl, "show shared_buffers")).toEqual([{ shared_buffers: buffers % 1024 === 0 ? `${buffers / 1024}GB` : `${buffers}MB` }]);
    // The library's exit hooks (which call process.exit on a signal) are not left installed.
    expect(["SIGINT", "SIGTERM", "SIGHUP"].map((signal) => process.listenerCount(signal))).toEqual(signalListenersBefore);

    const state = await stat(join(dataDir, "postgres.json"));
    expect(state.mode & 0o777).toBe(0o600);

    await query(first.databaseUrl, "create table kept (value text); insert into kept values ('survives')");
    const pid = await postmasterPid(dataDir);
    await Promise.all([first.stop(), first.stop()]);
    await first.stop();
    expect(await isProcessAlive(pid)).toBe(false);
    await expect(query(first.databaseUrl, "select 1")).rejects.toThrow();

    const second = await start(dataDir);
    expect(second.databaseUrl).toBe(first.databaseUrl);
    expect(await query(second.databaseUrl, "select value from kept")).toEqual([{ value: "survives" }]);
    await second.stop();
  });

  test("starts after the postmaster was SIGKILLed and left postmaster.pid behind", async () => {
    const dataDir = await makeDataDir();
    const crashed = await start(dataDir);
    await query(crashed.databaseUrl, "create table kept (value text); insert into kept values ('committed')");
    const pid = await postmasterPid(dataDir);
    signalProcess(pid, "SIGKILL");
    await waitForExit(pid);
    expect((await stat(join(dataDir, "postgres", "postmaster.pid"))).isFile()).toBe(true);

    const logger = recordingLogger();
    const restarted = await start(dataDir, logger);
    expect(logger.messages).toContain("removed stale postmaster.pid left by a crashed run");
    expect(await query(restarted.databaseUrl, "select value from kept")).toEqual([{ value: "committed" }]);
    // Stopping the crashed handle is a no-op and must not touch the new server.
    await crashed.stop();
    expect(await query(restarted.databaseUrl, "select 1 as one")).toEqual([{ one: 1 }]);
    await restarted.stop();
  });

  test("ignores a postmaster.pid whose pid now belongs to an unrelated process", async () => {
    const dataDir = await makeDataDir();
    const first = await start(dataDir);
    await first.stop();
    // pid reuse after a crash: the file names a live process that is not PostgreSQL (this test runner).
    await writeFile(join(dataDir, "postgres", "postmaster.pid"), `${process.pid}\n${join(dataDir, "postgres")}\n`);
    const second = await start(dataDir);
    expect(await query(second.databaseUrl, "select 1 as one")).toEqual([{ one: 1 }]);
    await second.stop();
  });

  test("refuses to start a second server on a cluster that is running", async () => {
    const dataDir = await makeDataDir();
    const running = await start(dataDir);
    await expect(startEmbeddedPostgres({ dataDir })).rejects.toThrow(/already running/);
    expect(await query(running.databaseUrl, "select 1 as one")).toEqual([{ one: 1 }]);
    await running.stop();
  });

  describe("when the owning process dies abruptly", () => {
    beforeAll(async () => {
      compiled = await compilePackage();
    }, 120_000);

    test("its watchdog shuts PostgreSQL down and the next start works", async () => {
      if (compiled === undefined) throw new Error("package not compiled");
      const dataDir = await makeDataDir();
      const owner = await startOwnerProcess(compiled, "startEmbeddedPostgres", dataDir);
      const databaseUrl = owner.result.databaseUrl ?? "";
      await query(databaseUrl, "create table kept (value text); insert into kept values ('owner')");
      const pid = await postmasterPid(dataDir);

      owner.kill();
      await owner.exited;
      await waitForExit(pid);

      const restarted = await start(dataDir);
      expect(restarted.databaseUrl).toBe(databaseUrl);
      expect(await query(restarted.databaseUrl, "select value from kept")).toEqual([{ value: "owner" }]);
      await restarted.stop();
    });

    test("an orphaned postmaster (owner and watchdog killed) is shut down by the next start", async () => {
      if (compiled === undefined) throw new Error("package not compiled");
      const dataDir = await makeDataDir();
      const owner = await startOwnerProcess(compiled, "startEmbeddedPostgres", dataDir);
      const pid = await postmasterPid(dataDir);
      const watchdogs = await findWatchdogPids(pid);
      expect(watchdogs).toHaveLength(1);
      for (const watchdog of watchdogs) signalProcess(watchdog, "SIGKILL");
      owner.kill();
      await owner.exited;
      expect(await isProcessAlive(pid)).toBe(true);

      const logger = recordingLogger();
      const restarted = await start(dataDir, logger);
      expect(logger.messages).toContain("stopping orphaned embedded PostgreSQL left by a crashed run");
      expect(await isProcessAlive(pid)).toBe(false);
      expect(await query(restarted.databaseUrl, "select 1 as one")).toEqual([{ one: 1 }]);
      await restarted.stop();
    });
  });

  const asRoot = process.getuid?.() === 0 ? test : test.skip;
  asRoot("as root, refuses a data directory the postgres user cannot traverse, naming the directory", async () => {
    const privateParent = await mkdtemp(join(tmpdir(), "roost-embedded-private-"));
    dataDirs.push(privateParent);
    await expect(startEmbeddedPostgres({ dataDir: join(privateParent, "data") })).rejects.toThrow(
      `${privateParent} has mode 0700: run chmod o+x ${privateParent}`,
    );
  });
});
