import { CHECK_TICK_SECONDS, maintenanceSchedules } from "@roost/queue";
import type { ComponentHealth, Logger } from "@roost/observability";
import type { GatewayQueues } from "./gateway.deps.js";

export interface QueueBootstrap {
  /** Registers the job schedulers; retries in the background until it succeeds or stop(). */
  start(): Promise<void>;
  health(): ComponentHealth;
  stop(): void;
}

/**
 * Startup bootstrap reported by /readyz as `startup_queue_bootstrap`: the
 * maintenance job schedulers and the check tick are upserted (idempotent, so every instance may
 * do it; BullMQ keeps one scheduler per id, so one instance runs each tick)
 * and their first jobs run now rather than a period later.
 */
export function createQueueBootstrap(queues: GatewayQueues, logger: Logger): QueueBootstrap {
  let state: ComponentHealth = { status: "starting" };
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  async function attempt(): Promise<boolean> {
    try {
      const names = Object.keys(maintenanceSchedules) as (keyof typeof maintenanceSchedules)[];
      for (const name of names) {
        // An `every` scheduler produces its first job at once: the due work starts now.
        await queues.maintenance.schedule(name, maintenanceSchedules[name], {});
      }
      // The checkers register the check tick too; whoever is first, one scheduler runs it.
      await queues.check.schedule("check-tick", CHECK_TICK_SECONDS, {});
      state = { status: "up", details: { schedulers: [...names, "check-tick"], bootstrapped_at: new Date().toISOString() } };
      return true;
    } catch (error) {
      state = { status: "down", details: { error: error instanceof Error ? error.message : String(error) } };
      logger.warn("queue bootstrap failed, retrying", { error });
      return false;
    }
  }

  return {
    async start() {
      if (await attempt()) return;
      let delayMs = 500;
      const retry = () => {
        if (stopped) return;
        timer = setTimeout(async () => {
          if (!(await attempt())) {
            delayMs = Math.min(delayMs * 2, 30_000);
            retry();
          }
        }, delayMs);
        timer.unref();
      };
      retry();
    },
    health: () => state,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
