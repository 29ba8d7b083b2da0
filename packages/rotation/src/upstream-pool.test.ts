import { UpstreamPool, type Upstream } from "./upstream-pool.js";

const upstream = (proxyId: number, country = "N/A"): Upstream => ({ proxyId, ip: `198.51.100.${proxyId}`, port: 8080, username: "", password: "", country });

describe("UpstreamPool", () => {
  it("rotates round robin and keeps its place across a refresh", () => {
    const pool = new UpstreamPool();
    pool.replace([upstream(1), upstream(2), upstream(3)]);
    expect([pool.pick(), pool.pick(), pool.pick(), pool.pick()].map((u) => u?.proxyId)).toEqual([1, 2, 3, 1]);
    pool.replace([upstream(1), upstream(2), upstream(3), upstream(4)]);
    expect(pool.pick()?.proxyId).toBe(2);
  });

  it("continues the rotation in proxy id order when members come and go", () => {
    const pool = new UpstreamPool();
    pool.replace([upstream(30), upstream(10), upstream(20)]);
    expect([pool.pick(), pool.pick()].map((u) => u?.proxyId)).toEqual([10, 20]);
    // 30 was due; members before it leave and arrive: neither skipped nor repeated.
    pool.replace([upstream(5), upstream(30), upstream(40)]);
    expect([pool.pick(), pool.pick(), pool.pick()].map((u) => u?.proxyId)).toEqual([30, 40, 5]);
    expect(pool.pick()?.proxyId).toBe(30);
    // 40 was due and left: the next one by id follows; with none after it, the ring wraps.
    pool.replace([upstream(5), upstream(30), upstream(50)]);
    expect([pool.pick(), pool.pick(), pool.pick()].map((u) => u?.proxyId)).toEqual([50, 5, 30]);
    pool.replace([upstream(5), upstream(30)]);
    expect(pool.pick()?.proxyId).toBe(5);
  });

  it("answers undefined when empty or when the country has none", () => {
    const pool = new UpstreamPool();
    expect(pool.pick()).toBeUndefined();
    pool.replace([upstream(1, "DE")]);
    expect(pool.pick({ country: "US" })).toBeUndefined();
  });

  it("targets a country", () => {
    const pool = new UpstreamPool();
    pool.replace([upstream(1, "DE"), upstream(2, "US"), upstream(3, "DE"), upstream(4, "US")]);
    expect([1, 2, 3].map(() => pool.pick({ country: "US" })?.proxyId)).toEqual([2, 4, 2]);
  });

  it("keeps a session on one upstream until it leaves the pool, then keeps the new one", () => {
    const pool = new UpstreamPool();
    pool.replace([upstream(1), upstream(2), upstream(3)]);
    const first = pool.pick({ session: "a" })?.proxyId;
    expect(pool.pick({ session: "a" })?.proxyId).toBe(first);
    expect(pool.pick({ session: "b" })?.proxyId).not.toBe(first);
    pool.replace([upstream(1), upstream(2), upstream(3)].filter((u) => u.proxyId !== first));
    const moved = pool.pick({ session: "a" })?.proxyId;
    expect(moved).not.toBe(first);
    expect([1, 2, 3].map(() => pool.pick({ session: "a" })?.proxyId)).toEqual([moved, moved, moved]);
  });

  it("skips excluded upstreams (failover) and benches one after repeated failures", () => {
    let now = 0;
    const pool = new UpstreamPool({ benchAfterFailures: 2, benchMs: 1000, now: () => now });
    pool.replace([upstream(1), upstream(2)]);
    expect(pool.pick({}, new Set([1]))?.proxyId).toBe(2);
    pool.reportFailure(1);
    pool.reportFailure(1);
    expect(pool.isBenched(1)).toBe(true);
    expect([1, 2, 3].map(() => pool.pick()?.proxyId)).toEqual([2, 2, 2]);
    now = 1001;
    expect(pool.isBenched(1)).toBe(false);
  });

  it("still answers with a benched upstream when nothing else is left", () => {
    const pool = new UpstreamPool({ benchAfterFailures: 1 });
    pool.replace([upstream(1)]);
    pool.reportFailure(1);
    expect(pool.pick()?.proxyId).toBe(1);
  });

  it("bounds its sticky sessions", () => {
    const pool = new UpstreamPool({ maxSessions: 2 });
    pool.replace([upstream(1), upstream(2), upstream(3), upstream(4)]);
    expect(["a", "b", "c"].map((session) => pool.pick({ session })?.proxyId)).toEqual([1, 2, 3]);
    // "a" was the oldest of three sessions over a bound of two: it takes the next in the rotation.
    expect(pool.pick({ session: "a" })?.proxyId).toBe(4);
    expect(pool.pick({ session: "c" })?.proxyId).toBe(3);
  });
});
