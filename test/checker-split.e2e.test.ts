import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import {
  closedPort,
  createTestDatabase,
  createTestRedis,
  freePort,
  startNginxJudge,
  startTarpit,
  startEchoJudge,
  startRelay,
  startTinyproxy,
  waitFor,
  type NginxJudge,
  type ProxyPeer,
  type Tarpit,
  type TestDatabase,
  type TestRedis,
} from "@roost/testkit";
import { runServiceProcess, type ServiceProcess } from "./support/service-process.js";

/**
 * The gateway and two checkers as separate processes on one PostgreSQL and
 * Redis: an upload over HTTP gets every proxy checked, both checkers share
 * the work, no proxy is checked twice in one cycle, a checker killed with
 * SIGKILL mid-batch loses no proxy (its batch is claimed again after the
 * lease), and the verdicts hold: auto-remove, reputation, judge health.
 */

const run = (service: string, env: Record<string, string>): ServiceProcess => runServiceProcess(service, env);

describe("gateway and two checkers as separate processes", () => {
  let database: TestDatabase;
  let redis: TestRedis;
  let judge: NginxJudge;
  let proxy: ProxyPeer;
  let tarpit: Tarpit;
  let dataDir: string;
  let db: pg.Pool;
  let base: string;
  let token: string;
  const children: ServiceProcess[] = [];
  const metricsPorts: number[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    redis = createTestRedis();
    judge = await startNginxJudge();
    proxy = await startTinyproxy({ mode: "elite" });
    tarpit = await startTarpit();
    dataDir = await mkdtemp(path.join(os.tmpdir(), "roost-split-"));
    db = new pg.Pool({ connectionString: database.url, max: 2 });
    const infra = { DATABASE_URL: database.url, REDIS_URL: redis.url, QUEUE_PREFIX: redis.prefix.slice(0, -1), ALLOW_PRIVATE_NETWORK_TARGETS: "true" };
    const port = await freePort();
    const gateway = run("gateway", { ...infra, PORT: String(port), DATA_DIR: dataDir, PASSWORD_HASH_MEMORY_KIB: "1024", PASSWORD_HASH_TIME_COST: "1" });
    children.push(gateway);
    base = `http://127.0.0.1:${port}`;
    await waitFor(
      async () => {
        if (gateway.child.exitCode !== null) throw new Error(`gateway exited: ${gateway.output.stderr}`);
        return (await fetch(`${base}/healthz`).catch(() => null))?.status === 200;
      },
      { timeoutMs: 30_000, what: "the gateway" },
    );
    const registered = await fetch(`${base}/api/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "split@example.com", password: "Correct-Horse-42" }),
    });
    token = ((await registered.json()) as { token: string }).token;
    const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    // Small batches and probes, so the work spreads over both checkers and a batch is in flight when one is killed.
    expect((await fetch(`${base}/api/saveSettings`, { method: "POST", headers: auth, body: JSON.stringify({ checker: { concurrency: 8, judges: [{ url: judge.httpUrl, regex: "default" }], ip_lookup: "" } }) })).status).toBe(200);
    const settings = { http_protocol: true, https_protocol: false, socks4_protocol: false, socks5_protocol: false, timeout: 1500, retries: 0, judges: [{ url: judge.httpUrl, regex: "default" }] };
    expect((await fetch(`${base}/api/user/settings`, { method: "POST", headers: auth, body: JSON.stringify(settings) })).status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const metricsPort = await freePort();
      metricsPorts.push(metricsPort);
      children.push(
        run("checker", { ...infra, CHECKER_BATCH_SIZE: "10", CHECKER_MAX_QUEUED_BATCHES: "4", CHECKER_LEASE_SECONDS: "6", CHECKER_JUDGE_HEALTH_SECONDS: "1", CHECKER_METRICS_PORT: String(metricsPort) }),
      );
    }
    for (const metricsPort of metricsPorts) {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${metricsPort}/healthz`).catch(() => null))?.status === 200, { timeoutMs: 30_000, what: "a checker" });
    }
  }, 120_000);

  afterAll(async () => {
    for (const started of children) if (started.child.exitCode === null && started.child.signalCode === null) started.child.kill("SIGTERM");
    await Promise.all(children.map((started) => started.exited));
    await db?.end();
    await proxy?.stop();
    await tarpit?.stop();
    await judge?.stop();
    await database?.drop();
    await redis?.cleanup();
    await rm(dataDir, { recursive: true, force: true });
  });

  const upload = async (lines: string[]): Promise<void> => {
    const form = new FormData();
    form.append("proxyTextarea", lines.join("\n"));
    const res = await fetch(`${base}/api/addProxies`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form });
    expect(res.status).toBe(200);
  };
  const unchecked = async (): Promise<number> => (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM proxies WHERE latest_check IS NULL")).rows[0]?.n ?? -1;
  const checksBy = async (metricsPort: number): Promise<number> => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    return [...text.matchAll(/^svc_checks_total\{[^}]*result="(?:alive|dead)"[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
  };
  const statisticsPerProxy = async (): Promise<number[]> =>
    (await db.query<{ n: number }>("SELECT (SELECT count(*)::int FROM proxy_statistics s WHERE s.proxy_id = p.id) AS n FROM proxies p")).rows.map((r) => r.n);

  it("checks an upload once per proxy, shared by both checkers", async () => {
    const dead = await closedPort();
    // One live proxy and 119 dead ones (each its own identity: the credentials differ).
    await upload([`127.0.0.1:${proxy.port}`, ...Array.from({ length: 119 }, (_, i) => `127.0.0.1:${dead}:u${i}:p`)]);
    await waitFor(async () => (await unchecked()) === 0, { timeoutMs: 60_000, what: "every proxy checked" });
    const { rows } = await db.query<{ alive: boolean }>("SELECT alive FROM proxies WHERE port = $1", [proxy.port]);
    expect(rows).toEqual([{ alive: true }]);
    expect(new Set(await statisticsPerProxy())).toEqual(new Set([1]));
    const [first, second] = await Promise.all(metricsPorts.map(checksBy));
    expect(first).toBeGreaterThan(0);
    expect(second).toBeGreaterThan(0);
    expect((first ?? 0) + (second ?? 0)).toBe(120);
  }, 90_000);

  it("loses no proxy when a checker is killed with SIGKILL mid-batch", async () => {
    // Tarpit proxies: each probe waits out the 1.5 s timeout, so batches are in flight for seconds.
    await upload(Array.from({ length: 60 }, (_, i) => `127.0.0.1:${tarpit.port}:t${i}:p`));
    await waitFor(async () => tarpit.openConnections() >= 4, { timeoutMs: 30_000, what: "probes in flight" });
    const victim = children[1];
    victim?.child.kill("SIGKILL");
    expect(await victim?.exited).toBe("SIGKILL");
    // The survivor checks the rest, and the victim's batch once its lease has run out.
    await waitFor(async () => (await unchecked()) === 0, { timeoutMs: 90_000, what: "every proxy checked after the kill" });
    const perProxy = await statisticsPerProxy();
    expect(perProxy.every((n) => n === 1)).toBe(true);
  }, 120_000);

  const auth = (): Record<string, string> => ({ authorization: `Bearer ${token}`, "content-type": "application/json" });
  const saveUserSettings = async (settings: object): Promise<void> => {
    expect((await fetch(`${base}/api/user/settings`, { method: "POST", headers: auth(), body: JSON.stringify(settings) })).status).toBe(200);
  };
  const statisticsAt = async (port: number): Promise<number> =>
    (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM proxy_statistics s JOIN proxies p ON p.id = s.proxy_id WHERE p.port = $1", [port])).rows[0]?.n ?? -1;
  /** One more check cycle of the proxies on `port`: made due, then claimed by a checker's next tick. */
  const cycleAt = async (port: number, proxies: number): Promise<void> => {
    const before = await statisticsAt(port);
    await db.query("UPDATE proxies SET next_check_at = now() WHERE port = $1", [port]);
    await waitFor(async () => (await statisticsAt(port)) >= before + proxies, { timeoutMs: 30_000, what: `a check cycle of port ${port}` });
  };
  const autoRemovedBy = async (metricsPort: number): Promise<number> =>
    Number(/^svc_proxies_auto_removed_total (\S+)/m.exec(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text())?.[1] ?? 0);

  it("keeps failing proxies with auto-remove off, and removes them across processes after the threshold's cycles once it is on", async () => {
    const dead = await closedPort();
    const failing = async () =>
      (await db.query<{ n: number; failures: number[] | null }>("SELECT count(*)::int AS n, array_agg(DISTINCT consecutive_failures) AS failures FROM proxies WHERE port = $1", [dead])).rows[0];
    await upload(Array.from({ length: 20 }, (_, i) => `127.0.0.1:${dead}:r${i}:p`));
    await waitFor(async () => (await statisticsAt(dead)) === 20, { timeoutMs: 30_000, what: "the first check of the failing proxies" });
    // Off (the default): three failed cycles, all 20 stay.
    await cycleAt(dead, 20);
    await cycleAt(dead, 20);
    expect(await failing()).toEqual({ n: 20, failures: [3] });
    // On with a threshold of 5: the fourth failed cycle keeps them, the fifth removes them.
    await saveUserSettings({ auto_remove_failing_proxies: true, auto_remove_failure_threshold: 5 });
    await cycleAt(dead, 20);
    expect(await failing()).toEqual({ n: 20, failures: [4] });
    await db.query("UPDATE proxies SET next_check_at = now() WHERE port = $1", [dead]);
    await waitFor(async () => (await failing())?.n === 0, { timeoutMs: 30_000, what: "the failing proxies removed" });
    // The first checker was killed above: the survivor removed them all and counted them.
    expect(await autoRemovedBy(metricsPorts[1] ?? 0)).toBe(20);
    const count = await fetch(`${base}/api/getProxyCount`, { headers: auth() });
    expect(await count.json()).toBe(Number((await db.query<{ n: number }>("SELECT count(*)::int AS n FROM proxies")).rows[0]?.n));
    await saveUserSettings({ auto_remove_failing_proxies: false });
  }, 150_000);

  it("rates a steady proxy good after three checks, and skips a judge that is down without blaming the proxy", async () => {
    const echo = await startEchoJudge();
    try {
      const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
      expect((await fetch(`${base}/api/user/settings`, { method: "POST", headers: auth, body: JSON.stringify({ judges: [{ url: echo.url, regex: "default" }] }) })).status).toBe(200);
      const row = async () =>
        (
          await db.query<{ alive: boolean; reputation_label: string; checks: number; latest: string; next_in_s: number }>(
            `SELECT alive, reputation_label, (SELECT count(*)::int FROM proxy_statistics s WHERE s.proxy_id = p.id) AS checks,
                    latest_check::text AS latest, extract(epoch FROM next_check_at - now())::int AS next_in_s
               FROM proxies p WHERE port = $1`,
            [proxy.port],
          )
        ).rows[0];
      // One more check cycle: the proxy made due, then the checker's next tick claims it.
      const cycle = async (): Promise<void> => {
        const before = (await row())?.checks ?? 0;
        await db.query("UPDATE proxies SET next_check_at = now() WHERE port = $1", [proxy.port]);
        await waitFor(async () => ((await row())?.checks ?? 0) > before, { timeoutMs: 30_000, what: "a check cycle" });
      };
      await cycle();
      await cycle();
      expect(await row()).toMatchObject({ alive: true, reputation_label: "good", checks: 3 });
      const survivor = metricsPorts[1] ?? 0;
      const judgeUp = async (): Promise<string | undefined> =>
        /svc_judge_up\{judge="http:\/\/127\.0\.0\.1:\d+"\} (\S+)/.exec(await (await fetch(`http://127.0.0.1:${survivor}/metrics`)).text())?.[1];
      await echo.stop();
      await waitFor(async () => (await judgeUp()) === "0", { timeoutMs: 30_000, what: "the judge seen down" });
      const latest = (await row())?.latest;
      await db.query("UPDATE proxies SET next_check_at = now() WHERE port = $1", [proxy.port]);
      // The cycle runs (the next check is set within a minute) but writes no dead statistic and keeps the verdict.
      await waitFor(async () => ((await row())?.next_in_s ?? 0) > 30, { timeoutMs: 30_000, what: "the skipped cycle" });
      expect(await row()).toMatchObject({ alive: true, reputation_label: "good", checks: 3, latest });
      await echo.start();
      await waitFor(async () => (await judgeUp()) === "1", { timeoutMs: 30_000, what: "the judge seen up again" });
      await cycle();
      expect(await row()).toMatchObject({ alive: true, reputation_label: "good", checks: 4 });
    } finally {
      await echo.close();
    }
  }, 150_000);

  it("rates a proxy that comes and goes poor while the steady one stays good, and the list filter and dashboard follow", async () => {
    await saveUserSettings({ judges: [{ url: judge.httpUrl, regex: "default" }] });
    const relay = await startRelay(proxy.port);
    try {
      await relay.start();
      await upload([`127.0.0.1:${relay.port}`]);
      await waitFor(async () => (await statisticsAt(relay.port)) === 1, { timeoutMs: 30_000, what: "the first check through the relay" });
      // Alive, dead, alive, dead, alive, dead: 37.34, poor (docs/reputation.md).
      for (let cycle = 1; cycle < 6; cycle++) {
        if (cycle % 2 === 0) await relay.start();
        else await relay.stop();
        await cycleAt(relay.port, 1);
      }
      await cycleAt(proxy.port, 1);
      const reputation = async (port: number) =>
        (await db.query<{ id: number; reputation_label: string; reputation_score: number }>("SELECT id, reputation_label, reputation_score FROM proxies WHERE port = $1", [port])).rows[0];
      const steady = await reputation(proxy.port);
      expect(steady).toMatchObject({ reputation_label: "good", reputation_score: 100 });
      expect(await reputation(relay.port)).toMatchObject({ reputation_label: "poor", reputation_score: 37.34 });
      const ports = async (query: string): Promise<number[]> =>
        ((await (await fetch(`${base}/api/getProxyPage/1?${query}`, { headers: auth() })).json()) as { proxies: { port: number }[] }).proxies.map((p) => p.port);
      expect(await ports("reputation=good")).toEqual([proxy.port]);
      expect(await ports("reputation=poor")).toEqual([relay.port]);
      expect(await ports("reputation=neutral")).toEqual([]);
      const total = Number((await db.query<{ n: number }>("SELECT count(*)::int AS n FROM proxies")).rows[0]?.n);
      const dashboard: unknown = await (await fetch(`${base}/api/getDashboardInfo`, { headers: auth() })).json();
      expect(dashboard).toMatchObject({
        reputation_breakdown: { good: 1, neutral: 0, poor: 1, unknown: total - 2 },
        top_reputation_proxy: { proxy_id: steady?.id, score: 100, label: "good" },
      });
    } finally {
      await relay.close();
    }
  }, 150_000);
});
