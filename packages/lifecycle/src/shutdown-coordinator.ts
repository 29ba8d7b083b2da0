/**
 * Ordered shutdown: listeners first (stop taking work), then workers, then
 * queues and Redis, then the database. Every step runs even if an earlier one
 * failed; the whole sequence has a deadline after which it gives up.
 */
export type ShutdownPhase = "listeners" | "workers" | "queues" | "database" | "infrastructure";

const ORDER: readonly ShutdownPhase[] = ["listeners", "workers", "queues", "database", "infrastructure"];

export interface ShutdownLogger {
  info(message: string, meta?: object): void;
  error(message: string, meta?: object): void;
}

export interface ShutdownCoordinator {
  add(phase: ShutdownPhase, name: string, step: () => Promise<void> | void): void;
  /** Runs every step once; later calls return the same promise. Resolves true when all steps finished in time. */
  run(reason: string): Promise<boolean>;
}

export function createShutdownCoordinator(options: { logger: ShutdownLogger; deadlineMs?: number }): ShutdownCoordinator {
  const steps: { phase: ShutdownPhase; name: string; step: () => Promise<void> | void }[] = [];
  let running: Promise<boolean> | null = null;

  async function runAll(reason: string): Promise<boolean> {
    options.logger.info("shutting down", { reason });
    let clean = true;
    for (const phase of ORDER) {
      // Steps within a phase are independent; run them together, newest registrations first.
      const inPhase = steps.filter((s) => s.phase === phase).reverse();
      await Promise.all(
        inPhase.map(async ({ name, step }) => {
          try {
            await step();
          } catch (error) {
            clean = false;
            options.logger.error("shutdown step failed", { step: name, error });
          }
        }),
      );
    }
    return clean;
  }

  return {
    add(phase, name, step) {
      steps.push({ phase, name, step });
    },
    run(reason) {
      if (running) return running;
      const deadlineMs = options.deadlineMs ?? 20_000;
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => {
          options.logger.error("shutdown deadline passed", { deadlineMs });
          resolve(false);
        }, deadlineMs);
        timer.unref();
      });
      running = Promise.race([runAll(reason), deadline]).finally(() => clearTimeout(timer));
      return running;
    },
  };
}
