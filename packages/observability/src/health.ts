/**
 * Readiness components. Each check answers quickly (callers pass a timeout)
 * and never throws: a failure is a `down` status with details.
 *
 * Overall status: `not_ready` when a critical component is `down` or
 * `starting`; `degraded` when a critical component says `degraded` or a
 * non-critical one is anything but `up`; `ready` otherwise. Components are
 * critical unless registered with `{critical: false}`.
 */
export type ComponentStatus = "up" | "down" | "degraded" | "starting";

export interface ComponentHealth {
  status: ComponentStatus;
  details?: Record<string, unknown>;
}

export type HealthCheck = () => Promise<ComponentHealth>;

export interface ReadinessReport {
  status: "ready" | "degraded" | "not_ready";
  components: Record<string, ComponentHealth>;
}

export interface HealthRegistry {
  register(name: string, check: HealthCheck, options?: { critical?: boolean }): void;
  /** Runs every check, each bounded by `timeoutMs` (2000); calls made while a run is in progress share it. */
  check(timeoutMs?: number): Promise<ReadinessReport>;
}

export function createHealthRegistry(): HealthRegistry {
  const checks = new Map<string, { check: HealthCheck; critical: boolean }>();

  async function runOne(check: HealthCheck, timeoutMs: number): Promise<ComponentHealth> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<ComponentHealth>((resolve) => {
      timer = setTimeout(() => resolve({ status: "down", details: { error: `no answer within ${timeoutMs} ms` } }), timeoutMs);
    });
    try {
      return await Promise.race([
        // Promise.resolve().then: a check that throws synchronously is `down` too, not a rejected report.
        Promise.resolve()
          .then(check)
          .catch((error: unknown) => ({
            status: "down" as const,
            details: { error: error instanceof Error ? error.message : String(error) },
          })),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  async function checkAll(timeoutMs: number): Promise<ReadinessReport> {
    const entries = [...checks.entries()];
    const results = await Promise.all(entries.map(([, { check }]) => runOne(check, timeoutMs)));
    const components: Record<string, ComponentHealth> = {};
    let status: ReadinessReport["status"] = "ready";
    entries.forEach(([name, { critical }], i) => {
      const result = results[i] ?? { status: "down" };
      components[name] = result;
      if (result.status === "up") return;
      if (critical && (result.status === "down" || result.status === "starting")) status = "not_ready";
      else if (status === "ready") status = "degraded";
    });
    return { status, components };
  }

  // Concurrent probes share one run, so a burst of /readyz calls costs one
  // round of database and Redis checks, not one per caller.
  let running: Promise<ReadinessReport> | null = null;

  return {
    register(name, check, options = {}) {
      checks.set(name, { check, critical: options.critical ?? true });
    },
    check(timeoutMs = 2000) {
      running ??= checkAll(timeoutMs).finally(() => {
        running = null;
      });
      return running;
    },
  };
}
