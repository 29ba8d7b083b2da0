import { ConfigError } from "@roost/config";
import { runService, type ServiceProcess } from "./run-service.js";

/** A process stand-in: records what the helper writes and the exit code, and raises signals on demand. */
function fakeProcess() {
  const listeners = new Map<string, (() => void)[]>();
  let stderr = "";
  let resolveExit: (code: number) => void = () => undefined;
  const exited = new Promise<number>((resolve) => (resolveExit = resolve));
  const exits: number[] = [];
  const proc: ServiceProcess = {
    on(signal, listener) {
      listeners.set(signal, [...(listeners.get(signal) ?? []), listener]);
    },
    exit(code) {
      exits.push(code);
      resolveExit(code);
    },
    stderr: { write: (text: string) => (stderr += text) },
  };
  return {
    proc,
    exited,
    exits,
    stderr: () => stderr,
    signal: (name: "SIGINT" | "SIGTERM") => (listeners.get(name) ?? []).forEach((listener) => listener()),
  };
}

const quiet = { LOG_LEVEL: "error" as const };

describe("runService", () => {
  it("prints a config error naming the variable and exits 1 without starting", async () => {
    const fake = fakeProcess();
    let started = false;
    runService(
      {
        config: () => {
          throw new ConfigError(["LOG_LEVEL: expected one of error, warn"]);
        },
        start: async () => {
          started = true;
        },
      },
      fake.proc,
    );
    expect(await fake.exited).toBe(1);
    expect(fake.stderr()).toBe("Invalid configuration:\n  - LOG_LEVEL: expected one of error, warn\n");
    expect(started).toBe(false);
  });

  it("prints a start failure after the entry's prefix and exits 1", async () => {
    const fake = fakeProcess();
    runService(
      {
        config: () => quiet,
        failurePrefix: "roost failed to start: ",
        start: () => Promise.reject(new Error("port in use")),
      },
      fake.proc,
    );
    expect(await fake.exited).toBe(1);
    expect(fake.stderr()).toBe("roost failed to start: port in use\n");
  });

  it("on a signal runs the shutdown in phase order once and exits 0", async () => {
    const fake = fakeProcess();
    const stopped: string[] = [];
    const run = runService(
      {
        config: () => quiet,
        start: async ({ shutdown }) => {
          shutdown.add("database", "pool", () => void stopped.push("database"));
          shutdown.add("listeners", "http", async () => {
            await new Promise((resolve) => setTimeout(resolve, 20));
            stopped.push("listeners");
          });
          shutdown.add("queues", "redis", () => void stopped.push("queues"));
          shutdown.add("workers", "worker", () => void stopped.push("workers"));
        },
      },
      fake.proc,
    );
    await run.started;
    fake.signal("SIGTERM");
    fake.signal("SIGINT");
    expect(await fake.exited).toBe(0);
    expect(stopped).toEqual(["listeners", "workers", "queues", "database"]);
    expect(fake.exits).toEqual([0]);
  });

  it("exits 1 when a shutdown step fails, after running the later ones", async () => {
    const fake = fakeProcess();
    const stopped: string[] = [];
    const run = runService(
      {
        config: () => quiet,
        start: async ({ shutdown }) => {
          shutdown.add("listeners", "http", () => Promise.reject(new Error("close failed")));
          shutdown.add("database", "pool", () => void stopped.push("database"));
        },
      },
      fake.proc,
    );
    await run.started;
    fake.signal("SIGINT");
    expect(await fake.exited).toBe(1);
    expect(stopped).toEqual(["database"]);
  });

  it("exits 1 when the shutdown passes its deadline", async () => {
    const fake = fakeProcess();
    const run = runService(
      {
        config: () => quiet,
        shutdownDeadlineMs: 50,
        start: async ({ shutdown }) => {
          shutdown.add("workers", "stuck", () => new Promise<void>(() => undefined));
        },
      },
      fake.proc,
    );
    await run.started;
    fake.signal("SIGTERM");
    expect(await fake.exited).toBe(1);
  });

  it("lets the shutdown decide the exit code when a signal cuts the start short", async () => {
    const fake = fakeProcess();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const run = runService(
      {
        config: () => quiet,
        start: async ({ shutdown }) => {
          let closed = false;
          shutdown.add("listeners", "http", () => void (closed = true));
          await gate;
          if (closed) throw new Error("Cannot read properties of null (reading 'address')");
        },
      },
      fake.proc,
    );
    fake.signal("SIGTERM");
    expect(await fake.exited).toBe(0);
    release();
    await run.started;
    expect(fake.exits).toEqual([0]);
    expect(fake.stderr()).toBe("");
  });

  it("tells a start still running that a signal came, so it can return early", async () => {
    const fake = fakeProcess();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let stoppingSeen: boolean | undefined;
    const run = runService(
      {
        config: () => quiet,
        start: async ({ stopping }) => {
          await gate;
          stoppingSeen = stopping();
        },
      },
      fake.proc,
    );
    fake.signal("SIGTERM");
    release();
    await run.started;
    expect(stoppingSeen).toBe(true);
    expect(await fake.exited).toBe(0);
  });
});
