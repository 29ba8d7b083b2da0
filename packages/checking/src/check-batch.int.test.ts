import { createDatabase, type Database } from "@roost/db";
import { OutboundGuard } from "@roost/net";
import { createLogger } from "@roost/observability";
import {
  closedPort,
  createTestDatabase,
  startEchoJudge,
  startDante,
  startMicrosocks,
  startNginxJudge,
  startRelay,
  startSquid,
  startTarpit,
  startTinyproxy,
  type NginxJudge,
  type ProxyPeer,
  type Tarpit,
  type TestDatabase,
} from "@roost/testkit";
import { runCheckBatch, type CheckBatchDeps } from "./check-batch.js";
import { writeCheckResults } from "./check-results.repository.js";
import { JudgeHealth } from "./judge-health.js";
import { ProbeLimiter } from "./probe-limiter.js";

/**
 * One check batch against real proxies (tinyproxy, squid, dante, microsocks)
 * and a real nginx judge on http and https: every verdict, and every row the
 * batch writes.
 */
describe("runCheckBatch against real peers", () => {
  let database: TestDatabase;
  let db: Database;
  let judge: NginxJudge;
  let tarpit: Tarpit;
  const peers: Record<string, ProxyPeer> = {};
  let deps: CheckBatchDeps;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = createDatabase({ databaseUrl: database.url });
    judge = await startNginxJudge();
    tarpit = await startTarpit();
    // One after another: peers started at once can be handed the same free port, and one then answers for both.
    const starters = [
      () => startTinyproxy({ mode: "elite" }),
      () => startTinyproxy({ mode: "anonymous" }),
      () => startTinyproxy({ mode: "transparent" }),
      () => startTinyproxy({ mode: "elite", basicAuth: { username: "alice", password: "s3cret" } }),
      () => startSquid({ forwardedFor: "off" }),
      () => startSquid({ forwardedFor: "on" }),
      () => startDante(),
      () => startDante({ auth: true }),
      () => startMicrosocks(),
    ];
    const started: ProxyPeer[] = [];
    for (const start of starters) started.push(await start());
    const names = ["elite", "anonymous", "transparent", "auth", "squidAnonymous", "squidTransparent", "dante", "danteAuth", "microsocks"];
    names.forEach((name, i) => {
      const peer = started[i];
      if (peer) peers[name] = peer;
    });
    deps = {
      pool: db.pool,
      guard: new OutboundGuard({ allowPrivateNetworkTargets: true }),
      probes: new ProbeLimiter(64, 256),
      logger: createLogger({ silent: true }),
      settings: () => ({
        intervalSeconds: 3600,
        standardHeaders: ["USER-AGENT", "HOST", "ACCEPT", "ACCEPT-ENCODING"],
        proxyHeaders: ["VIA", "X-FORWARDED-FOR", "FORWARDED", "X-REAL-IP", "CLIENT-IP", "X-PROXY-ID", "X-TINYPROXY"],
        saveResponses: true,
      }),
      // The checker's own address as the judge would see it without a proxy.
      ownAddresses: () => ["127.0.0.1"],
      requestHeaders: { "user-agent": "Roost-checker-test/1 (k7f3q)", accept: "text/plain,*/*;q=0.5", "accept-encoding": "identity" },
      tls: { ca: judge.caPem },
    };
  }, 60_000);
  afterAll(async () => {
    await Promise.all(Object.values(peers).map((peer) => peer.stop()));
    await tarpit?.stop();
    await judge?.stop();
    await db?.close();
    await database?.drop();
  });

  interface Setup {
    protocols: ("http" | "https" | "socks4" | "socks5")[];
    judges: { url: string; regex?: string }[];
    timeoutMs?: number;
    retries?: number;
    useHttpsForSocks?: boolean;
    autoRemoveAfter?: number;
  }
  const newUser = async (setup: Setup): Promise<number> => {
    const { rows } = await db.pool.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ('c' || gen_random_uuid() || '@example.com', 'x') RETURNING id");
    const userId = rows[0]?.id ?? 0;
    await db.pool.query(
      `INSERT INTO user_settings (user_id, http_protocol, https_protocol, socks4_protocol, socks5_protocol, timeout_ms, retries, use_https_for_socks,
                                  auto_remove_failing_proxies, auto_remove_failure_threshold, proxy_list_columns, scrape_source_proxy_columns, scrape_source_list_columns)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, '{}', '{}', '{}')`,
      [
        userId,
        ...(["http", "https", "socks4", "socks5"] as const).map((p) => setup.protocols.includes(p)),
        setup.timeoutMs ?? 3000,
        setup.retries ?? 0,
        setup.useHttpsForSocks ?? false,
        setup.autoRemoveAfter !== undefined,
        setup.autoRemoveAfter ?? 3,
      ],
    );
    for (const [position, j] of setup.judges.entries()) {
      await db.pool.query("INSERT INTO user_judges (user_id, url, regex, position) VALUES ($1, $2, $3, $4)", [userId, j.url, j.regex ?? "default", position]);
    }
    return userId;
  };
  const addProxy = async (userId: number, port: number, credentials?: { username: string; password: string }): Promise<number> =>
    (
      await db.pool.query<{ id: number }>("INSERT INTO proxies (user_id, ip, port, username, password) VALUES ($1, '127.0.0.1', $2, $3, $4) RETURNING id", [
        userId,
        port,
        credentials?.username ?? "",
        credentials?.password ?? "",
      ])
    ).rows[0]?.id ?? 0;
  const proxyRow = async (id: number) =>
    (
      await db.pool.query<{ alive: boolean; alive_protocols: number; anonymity_level: string; response_time: number; attempt: number | null; consecutive_failures: number; checked: boolean; next_in_s: number }>(
        `SELECT alive, alive_protocols, anonymity_level, response_time, attempt, consecutive_failures, latest_check IS NOT NULL AS checked,
                round(extract(epoch FROM next_check_at - now()))::int AS next_in_s FROM proxies WHERE id = $1`,
        [id],
      )
    ).rows[0];
  const statistics = async (id: number) =>
    (
      await db.pool.query<{ protocol: string; alive: boolean; anonymity_level: string; judge_url: string; attempt: number; response_time: number; body: string | null }>(
        `SELECT s.protocol, s.alive, s.anonymity_level, s.judge_url, s.attempt, s.response_time, r.body
           FROM proxy_statistics s LEFT JOIN proxy_statistic_responses r ON r.statistic_id = s.id AND r.created_at = s.created_at
          WHERE s.proxy_id = $1 ORDER BY s.protocol`,
        [id],
      )
    ).rows;
  const peer = (name: string): ProxyPeer => {
    const found = peers[name];
    if (!found) throw new Error(`no peer ${name}`);
    return found;
  };

  it("gives http proxies their verdict and anonymity, and writes statistics, bodies, status and roll-ups", async () => {
    const userId = await newUser({ protocols: ["http"], judges: [{ url: judge.httpUrl }] });
    const ids = {
      elite: await addProxy(userId, peer("elite").port),
      anonymous: await addProxy(userId, peer("anonymous").port),
      transparent: await addProxy(userId, peer("transparent").port),
      auth: await addProxy(userId, peer("auth").port, { username: "alice", password: "s3cret" }),
      wrongAuth: await addProxy(userId, peer("auth").port, { username: "alice", password: "wrong" }),
      squidAnonymous: await addProxy(userId, peer("squidAnonymous").port),
      squidTransparent: await addProxy(userId, peer("squidTransparent").port),
      closed: await addProxy(userId, await closedPort()),
    };
    const outcome = await runCheckBatch(deps, userId, Object.values(ids));
    expect(outcome.checked.sort((a, b) => a - b)).toEqual(Object.values(ids).sort((a, b) => a - b));
    expect(outcome.skipped).toEqual([]);
    const expected: Record<keyof typeof ids, string> = {
      elite: "elite",
      anonymous: "anonymous",
      transparent: "transparent",
      auth: "elite",
      wrongAuth: "N/A",
      squidAnonymous: "anonymous",
      squidTransparent: "transparent",
      closed: "N/A",
    };
    for (const [name, id] of Object.entries(ids) as [keyof typeof ids, number][]) {
      const row = await proxyRow(id);
      const alive = expected[name] !== "N/A";
      expect({ name, alive: row?.alive, anonymity: row?.anonymity_level, mask: row?.alive_protocols }).toEqual({ name, alive, anonymity: expected[name], mask: alive ? 1 : 0 });
      expect(row?.checked).toBe(true);
      expect(row?.consecutive_failures).toBe(alive ? 0 : 1);
      expect(row?.next_in_s).toBeGreaterThan(3500);
      if (alive) expect(row?.response_time).toBeGreaterThan(0);
      const stats = await statistics(id);
      expect(stats).toHaveLength(1);
      expect(stats[0]).toMatchObject({ protocol: "http", alive, anonymity_level: expected[name], judge_url: judge.httpUrl, attempt: 0 });
      if (alive) expect(stats[0]?.body).toContain("REMOTE_ADDR = ");
    }
    const { rows: status } = await db.pool.query<{ alive: boolean; history: string; history_length: number }>(
      "SELECT alive, history::text AS history, history_length FROM proxy_protocol_status WHERE proxy_id = $1 AND protocol = 'http'",
      [ids.elite],
    );
    expect(status).toEqual([{ alive: true, history: "1", history_length: 1 }]);
    const { rows: day } = await db.pool.query<{ checks: string; alive_checks: string }>("SELECT checks, alive_checks FROM user_daily_stats WHERE user_id = $1", [userId]);
    expect(day).toEqual([{ checks: "8", alive_checks: "6" }]);
    const { rows: judged } = await db.pool.query<{ judge_url: string; elite: string; anonymous: string; transparent: string }>(
      "SELECT judge_url, elite, anonymous, transparent FROM judge_daily_stats WHERE user_id = $1",
      [userId],
    );
    expect(judged).toEqual([{ judge_url: judge.httpUrl, elite: "2", anonymous: "2", transparent: "2" }]);
  });

  it("probes https through CONNECT and SOCKS through tunnels, each protocol on its own", async () => {
    const userId = await newUser({ protocols: ["http", "https", "socks4", "socks5"], judges: [{ url: judge.httpUrl }, { url: judge.httpsUrl }], useHttpsForSocks: true });
    const ids = {
      tinyproxy: await addProxy(userId, peer("elite").port),
      squid: await addProxy(userId, peer("squidAnonymous").port),
      dante: await addProxy(userId, peer("dante").port),
      danteAuth: await addProxy(userId, peer("danteAuth").port, peer("danteAuth").credentials),
      microsocks: await addProxy(userId, peer("microsocks").port),
    };
    await runCheckBatch(deps, userId, Object.values(ids));
    const masks = { http: 1, https: 2, socks4: 4, socks5: 8 };
    const expected: Record<keyof typeof ids, number> = {
      tinyproxy: masks.http | masks.https,
      squid: masks.http | masks.https,
      dante: masks.socks4 | masks.socks5,
      danteAuth: masks.socks5,
      microsocks: masks.socks5,
    };
    for (const [name, id] of Object.entries(ids) as [keyof typeof ids, number][]) {
      expect({ name, mask: (await proxyRow(id))?.alive_protocols }).toEqual({ name, mask: expected[name] });
      const stats = await statistics(id);
      expect(stats.map((s) => s.protocol)).toEqual(["http", "https", "socks4", "socks5"]);
      // SOCKS checks go to the https judge (UseHttpsForSocks), http to the http one.
      expect(stats.map((s) => s.judge_url)).toEqual([judge.httpUrl, judge.httpsUrl, judge.httpsUrl, judge.httpsUrl]);
    }
    expect((await proxyRow(ids.dante))?.anonymity_level).toBe("elite");
  });

  it("cuts a proxy that never answers at the timeout, after every retry, and counts the attempts", async () => {
    const userId = await newUser({ protocols: ["http"], judges: [{ url: judge.httpUrl }], timeoutMs: 400, retries: 2 });
    const id = await addProxy(userId, tarpit.port);
    const started = Date.now();
    await runCheckBatch(deps, userId, [id]);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(3 * 400);
    expect(elapsed).toBeLessThan(3 * 400 + 2000);
    const [stat] = await statistics(id);
    expect(stat).toMatchObject({ alive: false, attempt: 2 });
    expect(stat?.response_time).toBeGreaterThanOrEqual(390);
  });

  it("skips a protocol without a usable judge instead of recording it dead, and keeps its previous state", async () => {
    // https enabled, but the only https judge has a regex RE2 cannot run: https is skipped.
    const userId = await newUser({ protocols: ["http", "https"], judges: [{ url: judge.httpUrl }, { url: judge.httpsUrl, regex: "(?=REMOTE)" }] });
    const id = await addProxy(userId, peer("elite").port);
    await db.pool.query("UPDATE proxies SET alive = true, alive_protocols = 2, anonymity_level = 'elite', response_time = 50 WHERE id = $1", [id]);
    const outcome = await runCheckBatch(deps, userId, [id]);
    expect(outcome.skipped).toEqual(["https"]);
    expect((await statistics(id)).map((s) => s.protocol)).toEqual(["http"]);
    expect((await proxyRow(id))?.alive_protocols).toBe(1 | 2);
  });

  it("matches a user regex, and writes nothing for a proxy deleted before its batch ran", async () => {
    const userId = await newUser({ protocols: ["http"], judges: [{ url: judge.httpUrl, regex: "REMOTE_ADDR = 127\\.0\\.0\\.2" }] });
    const kept = await addProxy(userId, peer("elite").port);
    const gone = await addProxy(userId, peer("anonymous").port);
    await db.pool.query("DELETE FROM proxies WHERE id = $1", [gone]);
    const outcome = await runCheckBatch(deps, userId, [kept, gone]);
    expect(outcome.checked).toEqual([kept]);
    expect((await proxyRow(kept))?.alive).toBe(true);
    expect(await statistics(gone)).toEqual([]);
  });

  it("writes nothing for another user's proxy id in a batch's results", async () => {
    const owner = await newUser({ protocols: ["http"], judges: [{ url: judge.httpUrl }] });
    const other = await newUser({ protocols: ["http"], judges: [{ url: judge.httpUrl }] });
    const mine = await addProxy(owner, peer("elite").port);
    const theirs = await addProxy(other, peer("anonymous").port);
    const check = (proxyId: number) => ({
      proxyId, protocol: "http", alive: true, attempt: 0, responseMs: 12, anonymity: "elite", judgeUrl: judge.httpUrl, regex: "default", body: "HTTP_HOST = x",
    });
    const verdict = (proxyId: number) => ({ proxyId, probedMask: 1, aliveMask: 1, responseMs: 12, anonymity: "elite", attempt: 0, failedCycle: false, retrySoon: false });
    const outcome = await writeCheckResults(db.pool, owner, [check(mine), check(theirs)], [verdict(mine), verdict(theirs)], { intervalSeconds: 600, autoRemoveAfter: null, protocols: ["http"] });
    expect(outcome).toEqual({ updated: [mine], removed: [] });
    expect(await proxyRow(theirs)).toMatchObject({ alive: false, checked: false, response_time: 0 });
    expect(await statistics(theirs)).toEqual([]);
    const rows = async (table: string) => (await db.pool.query(`SELECT 1 FROM ${table} WHERE proxy_id = $1`, [theirs])).rowCount;
    expect(await rows("proxy_protocol_status")).toBe(0);
    expect(await rows("proxy_reputations")).toBe(0);
    expect(await proxyRow(mine)).toMatchObject({ alive: true, checked: true, response_time: 12, anonymity_level: "elite" });
    expect((await statistics(mine)).map((s) => s.body)).toEqual(["HTTP_HOST = x"]);
  });

  it("never dials a proxy or judge the outbound guard refuses: nothing reaches them, and the check is dead", async () => {
    const guarded = { ...deps, guard: new OutboundGuard() };
    const userId = await newUser({ protocols: ["http"], judges: [{ url: judge.httpUrl }], timeoutMs: 1000 });
    const before = tarpit.accepted();
    const id = await addProxy(userId, tarpit.port);
    await runCheckBatch(guarded, userId, [id]);
    expect(tarpit.accepted()).toBe(before);
    expect((await statistics(id)).map((s) => s.alive)).toEqual([false]);
  });

  const reputation = async (id: number) =>
    (
      await db.pool.query<{ reputation_label: string; reputation_score: number }>("SELECT reputation_label, reputation_score FROM proxies WHERE id = $1", [id])
    ).rows[0];

  it("rates a steady proxy good and one that comes and goes no better than neutral, in the row and per protocol", async () => {
    const userId = await newUser({ protocols: ["http"], judges: [{ url: judge.httpUrl }], timeoutMs: 1500 });
    const relay = await startRelay(peer("elite").port);
    try {
      const steady = await addProxy(userId, peer("elite").port);
      const flaky = await addProxy(userId, relay.port);
      for (let cycle = 0; cycle < 6; cycle++) {
        // The flaky proxy's listener is there on even cycles only.
        if (cycle % 2 === 0) await relay.start();
        else await relay.stop();
        await runCheckBatch(deps, userId, [steady, flaky]);
        if (cycle === 1) expect((await reputation(steady))?.reputation_label).toBe("unknown");
      }
      expect(await reputation(steady)).toEqual({ reputation_label: "good", reputation_score: 100 });
      const rated = await reputation(flaky);
      expect(["neutral", "poor"]).toContain(rated?.reputation_label);
      expect(rated?.reputation_score).toBeLessThan(70);
      const { rows } = await db.pool.query<{ kind: string; label: string }>("SELECT kind, label FROM proxy_reputations WHERE proxy_id = $1 ORDER BY kind", [steady]);
      expect(rows).toEqual([{ kind: "http", label: "good" }, { kind: "overall", label: "good" }]);
      // A check that leaves a reputation as it was does not rewrite its row: updated_at is when it last changed.
      const changedAt = async () =>
        (await db.pool.query<{ kind: string; updated_at: Date }>("SELECT kind, updated_at FROM proxy_reputations WHERE proxy_id = $1 ORDER BY kind", [steady])).rows;
      const before = await changedAt();
      const checkedBefore = (await db.pool.query<{ latest_check: Date }>("SELECT latest_check FROM proxies WHERE id = $1", [steady])).rows[0]?.latest_check;
      await runCheckBatch(deps, userId, [steady]);
      expect(await reputation(steady)).toEqual({ reputation_label: "good", reputation_score: 100 });
      expect(await changedAt()).toEqual(before);
      const checkedAfter = (await db.pool.query<{ latest_check: Date }>("SELECT latest_check FROM proxies WHERE id = $1", [steady])).rows[0]?.latest_check;
      expect(checkedAfter?.getTime()).toBeGreaterThan(checkedBefore?.getTime() ?? Number.POSITIVE_INFINITY);
      const { rows: window } = await db.pool.query<{ history: string; history_length: number }>("SELECT history::text AS history, history_length FROM proxy_protocol_status WHERE proxy_id = $1", [flaky]);
      // Oldest first: alive, dead, alive, dead, alive, dead -> bits 0b010101 with the newest (dead) in bit 0.
      expect(window).toEqual([{ history: String(0b101010), history_length: 6 }]);
    } finally {
      await relay.close();
    }
  }, 60_000);

  it("rates a proxy from its enabled protocols only: a turned-off protocol's good history does not keep it good", async () => {
    const userId = await newUser({ protocols: ["http", "socks5"], judges: [{ url: judge.httpUrl }], timeoutMs: 1500 });
    const relay = await startRelay(peer("elite").port);
    try {
      // The relay forwards to an HTTP proxy: alive on http, dead on socks5 while both are checked.
      const proxy = await addProxy(userId, relay.port);
      await relay.start();
      for (let cycle = 0; cycle < 3; cycle++) await runCheckBatch(deps, userId, [proxy]);
      expect(await reputation(proxy)).toEqual({ reputation_label: "good", reputation_score: 100 });
      // http turned off, and the proxy gone: only socks5's dead checks are left to rate it.
      await db.pool.query("UPDATE user_settings SET http_protocol = false WHERE user_id = $1", [userId]);
      await relay.stop();
      await runCheckBatch(deps, userId, [proxy]);
      expect((await reputation(proxy))?.reputation_label).toBe("poor");
    } finally {
      await relay.close();
    }
  }, 60_000);

  it("removes a proxy dead on every protocol for the threshold's cycles when auto-remove is on, and keeps it when off", async () => {
    const dead = await closedPort();
    const on = await newUser({ protocols: ["http"], judges: [{ url: judge.httpUrl }], autoRemoveAfter: 2 });
    const off = await newUser({ protocols: ["http"], judges: [{ url: judge.httpUrl }] });
    const doomed = await addProxy(on, dead);
    const alive = await addProxy(on, peer("elite").port);
    const kept = await addProxy(off, dead);
    const first = await runCheckBatch(deps, on, [doomed, alive]);
    expect(first.removed).toEqual([]);
    const second = await runCheckBatch(deps, on, [doomed, alive]);
    expect(second.removed).toEqual([doomed]);
    expect(second.checked).toEqual([alive]);
    for (let i = 0; i < 3; i++) await runCheckBatch(deps, off, [kept]);
    const { rows } = await db.pool.query<{ id: number; consecutive_failures: number }>("SELECT id, consecutive_failures FROM proxies WHERE id = ANY($1::int[]) ORDER BY id", [[doomed, alive, kept]]);
    expect(rows).toEqual([{ id: alive, consecutive_failures: 0 }, { id: kept, consecutive_failures: 3 }]);
  });

  it("counts a failed cycle without the protocols that have no judge, never when nothing was probed or a judge was down", async () => {
    const dead = await closedPort();
    const failures = async (id: number) => (await proxyRow(id))?.consecutive_failures;
    // https enabled without an https judge: left out, so the http failures alone reach the threshold.
    const partly = await newUser({ protocols: ["http", "https"], judges: [{ url: judge.httpUrl }], autoRemoveAfter: 2 });
    const removedAtTwo = await addProxy(partly, dead);
    expect((await runCheckBatch(deps, partly, [removedAtTwo])).removed).toEqual([]);
    expect((await runCheckBatch(deps, partly, [removedAtTwo])).removed).toEqual([removedAtTwo]);
    // socks5 over http (no UseHttpsForSocks) and no judge at all: nothing is probed, nothing counts.
    const unjudged = await newUser({ protocols: ["socks5"], judges: [], autoRemoveAfter: 1 });
    const neverProbed = await addProxy(unjudged, dead);
    for (let i = 0; i < 2; i++) expect((await runCheckBatch(deps, unjudged, [neverProbed])).removed).toEqual([]);
    expect(await failures(neverProbed)).toBe(0);
    // The http judge is down and https is probed dead: the cycle is incomplete and does not count.
    const echo = await startEchoJudge();
    try {
      const health = new JudgeHealth(deps.guard, deps.logger, { timeoutMs: 1000, tls: { ca: judge.caPem } });
      const downUser = await newUser({ protocols: ["http", "https"], judges: [{ url: echo.url }, { url: judge.httpsUrl }], autoRemoveAfter: 1 });
      const kept = await addProxy(downUser, dead);
      await echo.stop();
      await health.probeAll([], [echo.url, judge.httpsUrl]);
      for (let i = 0; i < 2; i++) {
        const outcome = await runCheckBatch({ ...deps, judgeHealth: health }, downUser, [kept]);
        expect(outcome).toMatchObject({ removed: [], skipped: ["http"] });
      }
      expect((await statistics(kept)).map((s) => [s.protocol, s.alive])).toEqual([["https", false], ["https", false]]);
      expect(await failures(kept)).toBe(0);
    } finally {
      await echo.close();
    }
  });

  it("skips a judge that is down without blaming the proxies, retries soon, and checks again once it is back", async () => {
    const echo = await startEchoJudge();
    try {
      const health = new JudgeHealth(deps.guard, deps.logger, { timeoutMs: 1000 });
      const withHealth = { ...deps, judgeHealth: health };
      const userId = await newUser({ protocols: ["http"], judges: [{ url: echo.url }] });
      const id = await addProxy(userId, peer("elite").port);
      await health.probeAll([], [echo.url]);
      await runCheckBatch(withHealth, userId, [id]);
      expect((await proxyRow(id))?.alive).toBe(true);
      await echo.stop();
      await health.probeAll([], [echo.url]);
      expect(health.isUp(echo.url)).toBe(false);
      const outcome = await runCheckBatch(withHealth, userId, [id]);
      expect(outcome.skipped).toEqual(["http"]);
      // No dead statistic, the previous state kept, the next check within a minute.
      expect((await statistics(id)).map((s) => s.alive)).toEqual([true]);
      const row = await proxyRow(id);
      expect(row).toMatchObject({ alive: true, consecutive_failures: 0 });
      expect(row?.next_in_s).toBeLessThanOrEqual(60);
      await echo.start();
      await health.probeAll([], [echo.url]);
      expect(health.isUp(echo.url)).toBe(true);
      await runCheckBatch(withHealth, userId, [id]);
      expect((await statistics(id)).map((s) => s.alive)).toEqual([true, true]);
    } finally {
      await echo.close();
    }
  });
});
