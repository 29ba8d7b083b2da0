import { createHealthRegistry } from "./health.js";

describe("HealthRegistry", () => {
  it("is ready when every component is up, and reports each component", async () => {
    const health = createHealthRegistry();
    health.register("database", async () => ({ status: "up" }));
    health.register("redis", async () => ({ status: "up", details: { ms: 1 } }));
    expect(await health.check()).toEqual({
      status: "ready",
      components: { database: { status: "up" }, redis: { status: "up", details: { ms: 1 } } },
    });
  });

  it("is not_ready when a critical component is down or starting", async () => {
    const down = createHealthRegistry();
    down.register("database", async () => {
      throw new Error("connection refused");
    });
    down.register("redis", async () => ({ status: "up" }));
    expect(await down.check()).toEqual({
      status: "not_ready",
      components: { database: { status: "down", details: { error: "connection refused" } }, redis: { status: "up" } },
    });

    const starting = createHealthRegistry();
    starting.register("bootstrap", async () => ({ status: "starting" }));
    expect((await starting.check()).status).toBe("not_ready");
  });

  it("is degraded when a critical component is degraded or a non-critical one is not up", async () => {
    const degraded = createHealthRegistry();
    degraded.register("database", async () => ({ status: "degraded" }));
    expect((await degraded.check()).status).toBe("degraded");

    const optional = createHealthRegistry();
    optional.register("database", async () => ({ status: "up" }));
    optional.register("geo", async () => ({ status: "down" }), { critical: false });
    expect((await optional.check()).status).toBe("degraded");
  });

  it("counts a check that throws synchronously or never answers as down", async () => {
    const health = createHealthRegistry();
    health.register("sync-thrower", (() => {
      throw new Error("boom");
    }) as () => Promise<{ status: "up" }>);
    health.register("hung", () => new Promise(() => undefined));
    const report = await health.check(50);
    expect(report.status).toBe("not_ready");
    expect(report.components["sync-thrower"]).toEqual({ status: "down", details: { error: "boom" } });
    expect(report.components.hung).toEqual({ status: "down", details: { error: "no answer within 50 ms" } });
  });

  it("lets concurrent callers share one run of the checks", async () => {
    const health = createHealthRegistry();
    let runs = 0;
    health.register("database", async () => {
      runs += 1;
      await new Promise((resolve) => setImmediate(resolve));
      return { status: "up" };
    });
    const reports = await Promise.all([health.check(), health.check(), health.check()]);
    expect(runs).toBe(1);
    expect(reports.map((r) => r.status)).toEqual(["ready", "ready", "ready"]);
    await health.check();
    expect(runs).toBe(2);
  });
});
