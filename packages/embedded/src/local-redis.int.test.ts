import { chmod, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Redis } from "ioredis";

import type { EmbeddedLogger } from "./embedded-logger.js";
import { type LocalRedisHandle, REDIS_SERVER_MISSING_MESSAGE, startLocalRedis } from "./local-redis.js";
import { type CompiledPackage, compilePackage, findWatchdogPids, startOwnerProcess } from "./owner-process.fixture.js";
import { isProcessAlive, signalProcess } from "./process-probe.js";
import { waitUntil } from "./wait-until.js";

const cleanups: Array<() => Promise<unknown>> = [];
const dataDirs: string[] = [];
let compiled: CompiledPackage | undefined;

async function makeDataDir(): Promise<string> {
  const dataDir = await mkdtemp(join(tmpdir(), "roost-embedded-redis-"));
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

async function start(dataDir: string, logger?: EmbeddedLogger, maxMemoryBytes?: number): Promise<LocalRedisHandle> {
  const handle = await startLocalRedis({ dataDir, logger, ...(maxMemoryBytes !== undefined && { maxMemoryBytes }) });
  cleanups.push(() => handle.stop());
  return handle;
}

/** Runs `use` with a connected client and always disconnects it. */
async function withClient<T>(redisUrl: string, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(redisUrl, { maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
  await client.connect();
  try {
    return await use(client);
  } finally {
    client.disconnect();
  }
}

async function redisPid(dataDir: string): Promise<number> {
  return Number((await readFile(join(dataDir, "redis", "redis-server.pid"), "utf8")).trim());
}

async function waitForExit(pid: number, timeoutMs = 30_000): Promise<void> {
  await waitUntil(async () => !(await isProcessAlive(pid)), { timeoutMs, description: `pid ${pid} to exit` });
}

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  for (const dataDir of dataDirs) {
    const pid = await redisPid(dataDir).catch(() => 0);
    if (await isProcessAlive(pid)) {
      for (const watchdog of await findWatchdogPids(pid)) signalProcess(watchdog, "SIGKILL");
      signalProcess(-pid, "SIGKILL");
    }
    await rm(dataDir, { recursive: true, force: true });
  }
  await compiled?.remove();
});

describe("startLocalRedis", () => {
  test("memory is bounded (maxmemory, noeviction): past the bound writes fail and no key is evicted", async () => {
    const dataDir = await makeDataDir();
    const bounded = await start(dataDir, undefined, 8 * 1024 * 1024);
    await withClient(bounded.redisUrl, async (client) => {
      expect(await client.config("GET", "maxmemory")).toEqual(["maxmemory", String(8 * 1024 * 1024)]);
      expect(await client.config("GET", "maxmemory-policy")).toEqual(["maxmemory-policy", "noeviction"]);
      await client.set("roost:first", "kept");
      const chunk = "x".repeat(512 * 1024);
      let refused: unknown;
      for (let i = 0; i < 64 && refused === undefined; i++) await client.set(`roost:fill:${i}`, chunk).catch((error: unknown) => (refused = error));
      expect(String(refused)).toMatch(/OOM/);
      expect(await client.get("roost:first")).toBe("kept");
    });
    await bounded.stop();
  });

  test("serves on loopback with its own port and password; keys survive a restart (append-only)", async () => {
    const dataDir = await makeDataDir();
    const first = await start(dataDir);

    const url = new URL(first.redisUrl);
    expect(url.protocol).toBe("redis:");
    expect(url.hostname).toBe("127.0.0.1");
    expect(url.port).not.toBe("6379");
    expect(url.password.length).toBeGreaterThanOrEqual(32);

    await withClient(first.redisUrl, async (client) => {
      expect(await client.ping()).toBe("PONG");
      expect(await client.config("GET", "appendonly")).toEqual(["appendonly", "yes"]);
      expect(await client.config("GET", "bind")).toEqual(["bind", "127.0.0.1"]);
      expect(await client.config("GET", "dir")).toEqual(["dir", join(dataDir, "redis")]);
      await client.set("roost:kept", "survives");
    });
    // Without the password, nothing.
    const { hostname, port } = new URL(first.redisUrl);
    const anonymous = new Redis({ host: hostname, port: Number(port), enableReadyCheck: false, maxRetriesPerRequest: 0, lazyConnect: true });
    anonymous.on("error", () => undefined);
    try {
      await anonymous.connect();
      await expect(anonymous.get("roost:kept")).rejects.toThrow(/NOAUTH/);
    } finally {
      anonymous.disconnect();
    }
    expect((await stat(join(dataDir, "redis.json"))).mode & 0o777).toBe(0o600);

    const pid = await redisPid(dataDir);
    await Promise.all([first.stop(), first.stop()]);
    await first.stop();
    expect(await isProcessAlive(pid)).toBe(false);

    const second = await start(dataDir);
    expect(second.redisUrl).toBe(first.redisUrl);
    expect(await withClient(second.redisUrl, (client) => client.get("roost:kept"))).toBe("survives");
    await second.stop();
  });

  test("starts after Redis was SIGKILLed and left its pid file behind; acknowledged writes survive", async () => {
    const dataDir = await makeDataDir();
    const crashed = await start(dataDir);
    await withClient(crashed.redisUrl, (client) => client.set("roost:kept", "acknowledged"));
    const pid = await redisPid(dataDir);
    signalProcess(pid, "SIGKILL");
    await waitForExit(pid);
    expect((await stat(join(dataDir, "redis", "redis-server.pid"))).isFile()).toBe(true);

    const restarted = await start(dataDir);
    expect(await withClient(restarted.redisUrl, (client) => client.get("roost:kept"))).toBe("acknowledged");
    await crashed.stop();
    expect(await withClient(restarted.redisUrl, (client) => client.ping())).toBe("PONG");
    await restarted.stop();
  });

  test("refuses to start a second Redis in a directory whose Redis is running", async () => {
    const dataDir = await makeDataDir();
    const running = await start(dataDir);
    await expect(startLocalRedis({ dataDir })).rejects.toThrow(/already running/);
    expect(await withClient(running.redisUrl, (client) => client.ping())).toBe("PONG");
    await running.stop();
  });

  test("says how to get redis-server when there is none", async () => {
    const dataDir = await makeDataDir();
    const attempt = startLocalRedis({ dataDir, redisServerCommand: "roost-test-no-such-redis-server" });
    await expect(attempt).rejects.toThrow(REDIS_SERVER_MISSING_MESSAGE);
    expect(REDIS_SERVER_MISSING_MESSAGE).toContain("apt-get install redis-server");
    expect(REDIS_SERVER_MISSING_MESSAGE).toContain("REDIS_URL");
  });

  describe("when the owning process dies abruptly", () => {
    beforeAll(async () => {
      compiled = await compilePackage();
    }, 120_000);

    test("its watchdog shuts Redis down and the next start works", async () => {
      if (compiled === undefined) throw new Error("package not compiled");
      const dataDir = await makeDataDir();
      const owner = await startOwnerProcess(compiled, "startLocalRedis", dataDir);
      const redisUrl = owner.result.redisUrl ?? "";
      await withClient(redisUrl, (client) => client.set("roost:kept", "owner"));
      const pid = await redisPid(dataDir);

      // The owner's whole process group: Redis runs in its own group and must still go.
      owner.kill({ group: true });
      await owner.exited;
      await waitForExit(pid);

      const restarted = await start(dataDir);
      expect(restarted.redisUrl).toBe(redisUrl);
      expect(await withClient(restarted.redisUrl, (client) => client.get("roost:kept"))).toBe("owner");
      await restarted.stop();
    });

    test("an orphaned Redis (owner and watchdog killed) is shut down by the next start", async () => {
      if (compiled === undefined) throw new Error("package not compiled");
      const dataDir = await makeDataDir();
      const owner = await startOwnerProcess(compiled, "startLocalRedis", dataDir);
      await withClient(owner.result.redisUrl ?? "", (client) => client.set("roost:kept", "orphan"));
      const pid = await redisPid(dataDir);
      const watchdogs = await findWatchdogPids(pid);
      expect(watchdogs).toHaveLength(1);
      for (const watchdog of watchdogs) signalProcess(watchdog, "SIGKILL");
      owner.kill({ group: true });
      await owner.exited;
      expect(await isProcessAlive(pid)).toBe(true);

      const logger = recordingLogger();
      const restarted = await start(dataDir, logger);
      expect(logger.messages).toContain("stopping orphaned local Redis left by a crashed run");
      expect(await isProcessAlive(pid)).toBe(false);
      expect(await withClient(restarted.redisUrl, (client) => client.get("roost:kept"))).toBe("orphan");
      await restarted.stop();
    });
  });
});
