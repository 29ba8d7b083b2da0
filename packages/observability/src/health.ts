/**
 * Readiness components. Each check answers quickly (callers pass a timeout)
 * and never throws: a failure is a `down` status with details.
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
        check().catch((error: unknown) => ({
          status: "down" as const,
          details: { error: error instanceof Error ? error.message : String(error) },
        })),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    register(name, check, options = {}) {
      checks.set(name, { check, critical: options.critical ?? true });
    },
    async check(timeoutMs = 2000) {
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
    },
  };
}
