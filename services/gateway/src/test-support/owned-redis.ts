import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort, waitFor, waitForPort } from "@roost/testkit";

/**
 * A redis-server owned by one test file, on a free loopback port, so the test
 * may stop, restart (empty: no persistence) or flush it without touching the
 * shared Redis. `close()` kills it; always call it in afterAll.
 */
export interface OwnedRedis {
  readonly url: string;
  readonly port: number;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
  /** Stops it (SIGTERM, then SIGKILL after 5 s) and waits for the exit. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash, and waits for the exit. */
  kill(): Promise<void>;
  /** Freezes it (SIGSTOP): connections stay open but nothing is answered, like a hung server. */
  pause(): void;
  /** Undoes pause() (SIGCONT). */
  resume(): void;
  close(): Promise<void>;
}

export async function startOwnedRedis(): Promise<OwnedRedis> {
  const port = await freePort();
  const dir = await mkdtemp(path.join(os.tmpdir(), "roost-owned-redis-"));
  let child: ChildProcess | null = null;

  async function start(): Promise<void> {
    if (child) throw new Error("owned redis already running");
    const started = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning"],
      { stdio: "ignore" },
    );
    child = started;
    started.once("exit", () => {
      if (child === started) child = null;
    });
    await waitForPort(port);
  }

  async function stop(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    const running = child;
    if (!running || running.exitCode !== null) {
      child = null;
      return;
    }
    const exited = new Promise<void>((resolve) => running.once("exit", () => resolve()));
    running.kill(signal);
    const force = setTimeout(() => running.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(force);
    child = null;
    // The port is closed once the process is gone; make sure nothing answers.
    await waitFor(
      () =>
        new Promise<boolean>((resolve) => {
          const socket = net.connect({ port, host: "127.0.0.1" });
          socket.once("connect", () => {
            socket.destroy();
            resolve(false);
          });
          socket.once("error", () => resolve(true));
        }),
      { what: `owned redis on ${port} to stop answering` },
    );
  }

  // If the test process ends without close() (a crash, a forced exit), take the server along.
  const killOnExit = () => child?.kill("SIGKILL");
  process.once("exit", killOnExit);

  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    start,
    stop: () => stop(),
    kill: () => stop("SIGKILL"),
    pause() {
      if (!child) throw new Error("owned redis is not running");
      child.kill("SIGSTOP");
    },
    resume() {
      child?.kill("SIGCONT");
    },
    async close() {
      process.off("exit", killOnExit);
      child?.kill("SIGCONT");
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
