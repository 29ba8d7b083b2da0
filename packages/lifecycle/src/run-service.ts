import type { LogLevel } from "@roost/config";
import { createLogger, type Logger } from "@roost/observability";
import { createShutdownCoordinator, type ShutdownCoordinator } from "./shutdown-coordinator.js";

/** What every entry point's config carries for its root logger. */
export interface ServiceLogConfig {
  LOG_LEVEL: LogLevel;
  LOG_FORMAT?: "json" | "pretty";
}

export interface ServiceContext<C> {
  readonly config: C;
  readonly logger: Logger;
  /** Register each started resource in its phase; a signal runs them in order. */
  readonly shutdown: ShutdownCoordinator;
  /** True once a signal started the shutdown: a long start checks it between steps and returns early. */
  stopping(): boolean;
}

export interface ServiceEntry<C extends ServiceLogConfig> {
  /**
   * Parses the environment once (the process's only env read). An error here
   * or in `start` is printed on stderr (a ConfigError names its variables); exit code 1.
   */
  config: () => C;
  /** Starts the service; the process then lives until SIGINT or SIGTERM. */
  start: (context: ServiceContext<C>) => Promise<void>;
  /** How long the ordered shutdown may take before the process exits 1; default 20 000 ms. */
  shutdownDeadlineMs?: number;
  /** Put before a start failure's message on stderr; default none. */
  failurePrefix?: string;
}

/** Where the process ends; a test passes its own to observe the exit code. */
export interface ServiceProcess {
  on(signal: "SIGINT" | "SIGTERM", listener: () => void): void;
  exit(code: number): void;
  stderr: { write(text: string): unknown };
}

export interface ServiceRun {
  /** Settles when start finished or failed (the process may already be exiting). */
  started: Promise<void>;
}

/**
 * The skeleton of every `main.ts`: config, root logger, signal handling from
 * the first moment, ordered shutdown with a deadline, exit code (0 when every
 * shutdown step finished in time, 1 otherwise or when the start failed).
 */
export function runService<C extends ServiceLogConfig>(entry: ServiceEntry<C>, proc: ServiceProcess = process): ServiceRun {
  const fail = (error: unknown): void => {
    const message = error instanceof Error ? error.message : String(error);
    proc.stderr.write(`${entry.failurePrefix ?? ""}${message}\n`);
    proc.exit(1);
  };
  let config: C;
  try {
    config = entry.config();
  } catch (error) {
    fail(error);
    return { started: Promise.resolve() };
  }
  const logger = createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  const shutdown = createShutdownCoordinator({ logger, deadlineMs: entry.shutdownDeadlineMs });
  let stopping = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    // A repeated signal (Ctrl-C reaches npm and the service alike) does not cut the shutdown short.
    proc.on(signal, () => {
      if (stopping) return;
      stopping = true;
      void shutdown.run(signal).then((clean) => proc.exit(clean ? 0 : 1));
    });
  }
  const started = Promise.resolve()
    .then(() => entry.start({ config, logger, shutdown, stopping: () => stopping }))
    .catch((error: unknown) => {
      // A start cut short by the shutdown (a server closed under it) is no failure: the shutdown sets the exit code.
      if (stopping) logger.info("start interrupted by the shutdown", { reason: error instanceof Error ? error.message : String(error) });
      else fail(error);
    });
  return { started };
}
