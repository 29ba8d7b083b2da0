import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { fork } from "node:child_process";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { benchConfigFromProcess, type BenchConfig } from "./bench.config.js";
import { createBenchDatabase, seedProxies } from "./bench-database.js";
import { cpuTimes, postgresCpuBetween, postgresCpuMs, stolenShare, type CpuTimes } from "./host.js";
import { apiExport, apiUpload, sqlExport, sqlUpload, uploadLines, type BulkResult, type ExportBenchFormat } from "./bulk-scenarios.js";
import { FIRST_HUNDRED, LIST_SCENARIOS, pageDifferences, sqlSide, type ListScenario } from "./list-scenarios.js";
import type { GatewayProcessData, GatewayProcessMessage, GatewayProcessRequest, GatewayWindow } from "./gateway.process.js";
import { KeepAliveGetClient, LoopbackClient, mergeSamples, percentile, runLoad, type Samples } from "./load.js";
import { idleServicesRss, listFlagsAB } from "./v8-flags.ab.js";

/**
 * `npm run bench`: the proxy inventory at 1M rows, the API beside the raw SQL
 * doing the same work on the same database in the same run (docs/benchmarks.md).
 */

const TARGETS = {
  /** API p99 over raw SQL p99 for the same page. */
  apiOverSqlP99: 1.5,
  firstHundredP99Ms: 25,
  anyPageP99Ms: 150,
  uploadLinesPerSec: 100_000,
  exportRowsPerSec: 300_000,
};

/** Every export is checked against the same rate target: the default template, then the whole-row formats. */
const EXPORT_FORMATS: readonly ExportBenchFormat[] = ["ip:port", "csv", "json"];

const PASSWORD = "Bench-Password-42";

/** Calls of each list scenario whose API page body is compared with the SQL side's rows before measuring. */
const PAGE_BODY_SAMPLE = [0, 1, 57];

/** Upload and export figures are the median of this many runs, API and SQL alternating. */
const BULK_RUNS = 3;

const out = (line = ""): void => {
  process.stdout.write(`${line}\n`);
};
const ms = (value: number): string => (Number.isNaN(value) ? "n/a" : `${value.toFixed(1)} ms`);
const rate = (rows: number, millis: number): number => (millis > 0 ? (rows * 1000) / millis : 0);
const kilo = (value: number): string => `${Math.round(value / 1000)}k`;

interface Verdict {
  target: string;
  measured: string;
  pass: boolean;
}

async function main(config: BenchConfig): Promise<number> {
  const started = Date.now();
  const verdicts: Verdict[] = [];
  const problems: string[] = [];
  const cleanups: { what: string; run: () => Promise<void> }[] = [];

  out(`Roost inventory benchmark${config.smoke ? " (smoke)" : ""}: ${config.proxies.toLocaleString("en")} proxies, ${config.concurrency} clients`);
  const load = (): string => os.loadavg().map((n) => n.toFixed(2)).join(" ");
  out(`node ${process.version}, ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, load average ${load()} (other work on the machine skews every number)`);
  const gatewayFlags = await gatewayNodeFlags();
  const profileFlags = config.gatewayCpuProfileDir ? ["--cpu-prof", `--cpu-prof-dir=${config.gatewayCpuProfileDir}`] : [];
  const mainFlags = [...(config.v8Flags === "off" ? [] : gatewayFlags), ...profileFlags];

  const database = await createBenchDatabase(config.adminDatabaseUrl);
  cleanups.push({ what: "database", run: () => database.drop() });
  try {
    // The gateway, as main.ts builds it, on its own database and Redis prefix, in a child process with the gateway's V8 flags.
    const dataDir = await mkdtemp(path.join(os.tmpdir(), "roost-bench-"));
    cleanups.push({ what: "data dir", run: () => rm(dataDir, { recursive: true, force: true }) });
    /** A gateway process of its own Redis prefix, stopped (and its keys deleted) at the end. */
    const startGateway = async (what: string, flags = mainFlags): Promise<GatewayProcess> => {
      const data = { databaseUrl: database.url, redisUrl: config.redisUrl, queuePrefix: `roost-bench-${randomBytes(4).toString("hex")}`, dataDir };
      const started = await startGatewayProcess(data, flags);
      cleanups.push({ what, run: () => started.stop() });
      return started;
    };
    const gateway = await startGateway("gateway");
    out(`gateway: a child process, node ${gateway.flags.join(" ") || "(no V8 flags)"} (scripts/service-node-flags.mjs, --v8-flags=${config.v8Flags})`);
    if (config.v8Flags === "both") {
      out();
      out(`Idle resident memory, each service started alone, with the gateway's V8 flags and without:`);
      const entry = (service: "mailer" | "maintenance"): string => fileURLToPath(new URL(`../../services/${service}/dist/main.js`, import.meta.url));
      const idle = { databaseUrl: database.url, redisUrl: config.redisUrl, queuePrefix: gateway.queuePrefix, flags: gatewayFlags, idleMs: config.idleMs, entry };
      problems.push(...(await idleServicesRss(idle, out)));
    }
    const address = { port: gateway.port };
    const client = new LoopbackClient(address.port, config.concurrency);
    cleanups.push({ what: "http client", run: async () => client.close() });

    const register = async (): Promise<{ token: string; userId: number; email: string }> => {
      const email = `bench-${randomBytes(4).toString("hex")}@example.com`;
      const res = await client.request("POST", "/api/register", { "Content-Type": "application/json" }, Buffer.from(JSON.stringify({ email, password: PASSWORD })));
      if (res.status !== 201) throw new Error(`register answered ${res.status}: ${res.body.toString()}`);
      const { token } = JSON.parse(res.body.toString()) as { token: string };
      const me = await client.request("GET", "/api/checkLogin", { Authorization: `Bearer ${token}` });
      return { token, userId: (JSON.parse(me.body.toString()) as { user_id: number }).user_id, email };
    };
    /** A token of `email` on another gateway process (each has a JWT secret of its own). */
    const loginOn = async (target: GatewayProcess, email: string, what: string, via?: LoopbackClient): Promise<string> => {
      const http = via ?? new LoopbackClient(target.port, 1);
      try {
        const login = await http.request("POST", "/api/login", { "Content-Type": "application/json" }, Buffer.from(JSON.stringify({ email, password: PASSWORD })));
        if (login.status !== 200) throw new Error(`login on the ${what} answered ${login.status}: ${login.body.toString()}`);
        return (JSON.parse(login.body.toString()) as { token: string }).token;
      } finally {
        if (!via) http.close();
      }
    };
    const listUser = await register();

    // The raw SQL side gets the same pool size as the gateway (createDatabase's default, 10).
    const sql = new pg.Pool({ connectionString: database.url, max: 10, application_name: "roost-bench-sql" });
    cleanups.push({ what: "sql pool", run: () => sql.end() });

    const seedStarted = Date.now();
    await seedProxies(sql, listUser.userId, config.proxies);
    const { rows: sizeRows } = await sql.query<{ size: string }>("SELECT pg_size_pretty(pg_total_relation_size('proxies')) AS size");
    out(`seeded ${config.proxies.toLocaleString("en")} proxies in ${((Date.now() - seedStarted) / 1000).toFixed(1)} s (proxies table with indexes: ${sizeRows[0]?.size ?? "?"})`);

    // The seed and each upload leave up to a gigabyte of WAL whose checkpoint PostgreSQL spreads
    // over the next 30-60 s: flushed before each measured part instead, so no part (and no side of
    // one) is measured while the previous part's pages are written out.
    let checkpointRefused: string | undefined;
    const settle = async (): Promise<void> => {
      if (checkpointRefused !== undefined) return;
      await sql.query("CHECKPOINT").catch((error: unknown) => {
        checkpointRefused = error instanceof Error ? error.message : String(error);
        out(`(CHECKPOINT refused, parts are measured while earlier writes are flushed: ${checkpointRefused})`);
      });
    };
    await settle();

    // --- list pages -------------------------------------------------------
    out();
    const stolen: string[] = [];
    let partStarted: CpuTimes | null = cpuTimes();
    const partDone = (part: string): void => {
      const now = cpuTimes();
      stolen.push(`${part} ${stolenShare(partStarted, now)}`);
      partStarted = now;
    };
    const minSideSeconds = (config.rounds * config.minRoundMs) / 1000;
    out(
      `List pages (pageSize 40), ${config.concurrency} concurrent clients, at least ${config.requests} requests` +
        `${minSideSeconds > 0 ? ` and ${minSideSeconds} s` : ""} per side in ${config.rounds} alternating rounds:`,
    );
    const pages = new KeepAliveGetClient(address.port, { Authorization: `Bearer ${listUser.token}` });
    cleanups.push({ what: "page client", run: async () => pages.close() });
    const firstHundred: Samples[] = [];
    const gatewayNotes: string[] = [];
    const cpuNotes: string[] = [];
    let worstApiP99 = 0;
    let worstApiMax = 0;
    // Warm-up of the code before anything is measured: the gateway's CPU per page falls about
    // fivefold over the first ~3,000 requests while V8 optimises it, and the first scenario was
    // measured during that.
    const everyScenario = (i: number): ListScenario => {
      const scenario = LIST_SCENARIOS[i % LIST_SCENARIOS.length];
      if (!scenario) throw new Error("no list scenarios");
      return scenario;
    };
    const jitWarmup = { concurrency: config.concurrency, requests: config.jitWarmupRequests, maxMs: 4 * config.maxScenarioMs };
    const warmedSql = await runLoad(jitWarmup, async (i) => {
      await sqlSide(sql, everyScenario(i), listUser.userId, i);
    });
    const warmedApi = await runLoad(jitWarmup, async (i) => {
      const res = await pages.get(everyScenario(i).apiPath(i));
      if (res.status !== 200) throw new Error(`${everyScenario(i).apiPath(i)} answered ${res.status}`);
    });
    for (const [side, warmed] of [["SQL", warmedSql], ["API", warmedApi]] as const) {
      if (warmed.errors > 0) problems.push(`warm-up: ${warmed.errors} ${side} errors (${warmed.firstError})`);
    }
    /** Measures one scenario, API and SQL in alternating rounds; prints its row and keeps its notes and verdict. */
    const measureList = async (scenario: ListScenario, label = scenario.name, target = { gateway, pages }): Promise<void> => {
      const apiCall = async (i: number): Promise<void> => {
        const res = await target.pages.get(scenario.apiPath(i));
        if (res.status !== 200) throw new Error(`${scenario.apiPath(i)} answered ${res.status}: ${res.body.toString().slice(0, 200)}`);
      };
      const sqlCall = async (i: number): Promise<void> => {
        await sqlSide(sql, scenario, listUser.userId, i);
      };
      // Same answer first: on a sample of calls, the API's page body (every row, field by field, and the total) must be the SQL's.
      for (const i of PAGE_BODY_SAMPLE) {
        const res = await target.pages.get(scenario.apiPath(i));
        if (res.status !== 200) {
          problems.push(`${label}: ${scenario.apiPath(i)} answered ${res.status}`);
          continue;
        }
        const differences = pageDifferences(res.body.toString(), await sqlSide(sql, scenario, listUser.userId, i));
        if (differences.length > 0) problems.push(`${label}: ${scenario.apiPath(i)} differs from the SQL side: ${differences.join("; ")}`);
      }

      const warm = { concurrency: config.concurrency, requests: config.warmupRequests, maxMs: config.maxScenarioMs };
      await runLoad(warm, sqlCall);
      await runLoad(warm, apiCall);
      const perRound = {
        concurrency: config.concurrency,
        requests: Math.ceil(config.requests / config.rounds),
        minMs: config.minRoundMs,
        maxMs: config.maxScenarioMs / config.rounds,
      };
      const apiParts: Samples[] = [];
      const gcWindows: GatewayWindow[] = [];
      const sqlParts: Samples[] = [];
      const apiCpu = new SideCpu();
      const sqlCpu = new SideCpu();
      for (let round = 0; round < config.rounds; round++) {
        sqlParts.push(await sqlCpu.during(() => runLoad(perRound, sqlCall)));
        const { result, window } = await apiCpu.during(() => target.gateway.observe(() => runLoad(perRound, apiCall)));
        apiParts.push(result);
        gcWindows.push(window);
      }
      const api = mergeSamples(apiParts);
      const handlerMs = gcWindows.flatMap((w) => w.handlerMs);
      const raw = mergeSamples(sqlParts);
      if (api.errors > 0) problems.push(`${label}: ${api.errors} API errors (${api.firstError})`);
      if (raw.errors > 0) problems.push(`${label}: ${raw.errors} SQL errors (${raw.firstError})`);
      const apiP99 = percentile(api.latenciesMs, 99);
      const sqlP99 = percentile(raw.latenciesMs, 99);
      const ratio = apiP99 / sqlP99;
      worstApiP99 = Math.max(worstApiP99, apiP99);
      worstApiMax = Math.max(worstApiMax, ...api.latenciesMs);
      if (label === FIRST_HUNDRED) firstHundred.push(api);
      out(
        `${label.padEnd(28)}${ms(percentile(api.latenciesMs, 50)).padStart(11)}${ms(apiP99).padStart(11)}` +
          `${ms(percentile(raw.latenciesMs, 50)).padStart(11)}${ms(sqlP99).padStart(11)}${ratio.toFixed(2).padStart(13)}  ${api.latenciesMs.length}/${raw.latenciesMs.length}`,
      );
      gatewayNotes.push(
        `${label}: ${gcWindows.reduce((n, w) => n + w.gcPauses, 0)} GC pauses (${gcWindows.reduce((n, w) => n + w.gcMajorPauses, 0)} of a full collection), ` +
          `${gcWindows.reduce((n, w) => n + w.gcMs, 0).toFixed(1)} ms in all, ` +
          `longest ${Math.max(...gcWindows.map((w) => w.gcMaxMs)).toFixed(1)} ms; longest event-loop delay ${Math.max(...gcWindows.map((w) => w.loopDelayMaxMs)).toFixed(1)} ms; ` +
          `in the handler p50 ${ms(percentile(handlerMs, 50))}, p99 ${ms(percentile(handlerMs, 99))} (load generator's longest event-loop delay ` +
          `${Math.max(...gcWindows.map((w) => w.clientLoopDelayMaxMs ?? 0)).toFixed(1)} ms)`,
      );
      const apiRequests = api.latenciesMs.length + api.errors;
      const gatewayUs = (gcWindows.reduce((n, w) => n + w.cpuMs, 0) * 1000) / apiRequests;
      cpuNotes.push(`${label}: API ${apiCpu.perRequest(apiRequests, gatewayUs)}; SQL ${sqlCpu.perRequest(raw.latenciesMs.length + raw.errors)}`);
      verdicts.push({ target: `${label}: API p99 <= ${TARGETS.apiOverSqlP99} x SQL p99`, measured: `${ratio.toFixed(2)} x`, pass: ratio <= TARGETS.apiOverSqlP99 });
    };
    const printListNotes = (): void => {
      out("Gateway process while the API side was measured:");
      for (const note of gatewayNotes.splice(0)) out(`  ${note}`);
      out("CPU per request, µs (both cores give 2,000,000 µs a second; PostgreSQL counts every postgres process):");
      for (const note of cpuNotes.splice(0)) out(`  ${note}`);
    };
    const listHeader = (): void => {
      out(`${"scenario".padEnd(28)}${"API p50".padStart(11)}${"API p99".padStart(11)}${"SQL p50".padStart(11)}${"SQL p99".padStart(11)}${"p99 API/SQL".padStart(13)}  n`);
    };
    listHeader();
    for (const scenario of LIST_SCENARIOS) await measureList(scenario);
    printListNotes();
    if (config.v8Flags === "both") {
      out();
      out(`V8 flags A/B on the list pages: the gateway above (flags) and a second one without them, alternating in ${config.rounds} rounds per scenario:`);
      const bare = await startGateway("gateway without V8 flags", []);
      const bareToken = await loginOn(bare, listUser.email, "gateway without V8 flags");
      const barePages = new KeepAliveGetClient(bare.port, { Authorization: `Bearer ${bareToken}` });
      cleanups.push({ what: "page client of the gateway without V8 flags", run: async () => barePages.close() });
      const warmedBare = await runLoad(jitWarmup, async (i) => {
        const res = await barePages.get(everyScenario(i).apiPath(i));
        if (res.status !== 200) throw new Error(`${everyScenario(i).apiPath(i)} answered ${res.status}`);
      });
      if (warmedBare.errors > 0) problems.push(`warm-up of the gateway without V8 flags: ${warmedBare.errors} errors (${warmedBare.firstError})`);
      const variants = [
        { label: "flags", flags: gateway.flags, pages, observe: gateway.observe },
        { label: "none", flags: bare.flags, pages: barePages, observe: bare.observe },
      ] as const;
      problems.push(...(await listFlagsAB(variants, LIST_SCENARIOS, config, out)));
    }
    const hundredP99 = percentile(mergeSamples(firstHundred).latenciesMs, 99);
    verdicts.push({ target: `first 100 unfiltered pages: API p99 <= ${TARGETS.firstHundredP99Ms} ms`, measured: ms(hundredP99), pass: hundredP99 <= TARGETS.firstHundredP99Ms });
    // "Any page" also covers the first page measured after the exports: its verdict is filled in there, listed here.
    const anyPageAt = verdicts.length;

    partDone("list pages");
    // Why totals come from counters: the plain count over the user's rows, for reference.
    const countSamples = await runLoad({ concurrency: 1, requests: 5, maxMs: 10_000 }, async () => {
      await sql.query("SELECT count(*) FROM proxies WHERE user_id = $1", [listUser.userId]);
    });
    out(`(for reference: SELECT count(*) of the user's ${config.proxies.toLocaleString("en")} rows, alone: p50 ${ms(percentile(countSamples.latenciesMs, 50))})`);

    // --- upload -------------------------------------------------------------
    out();
    const lines = uploadLines(config.uploadLines);
    const uploadBytes = Buffer.byteLength(lines.join("\n")) + 1;
    out(
      `Upload of ${config.uploadLines.toLocaleString("en")} lines (${(uploadBytes / 2 ** 20).toFixed(2)} MiB), end to end, ` +
        `the median of ${BULK_RUNS} runs (API, SQL, API, ...; each into an account of its own):`,
    );
    // Each run gets fresh accounts, so no run finds the previous one's proxies already stored.
    const uploadAccounts: { api: { token: string }; sql: { userId: number } }[] = [];
    for (let run = 0; run < BULK_RUNS; run++) uploadAccounts.push({ api: await register(), sql: await register() });
    partStarted = cpuTimes();
    const apiUpCpu = new SideCpu();
    const sqlUpCpu = new SideCpu();
    const apiUps: (BulkResult & { details?: Record<string, number> })[] = [];
    const sqlUps: BulkResult[] = [];
    let upGatewayCpuMs = 0;
    for (const accounts of uploadAccounts) {
      await settle();
      const { result, window } = await apiUpCpu.during(() => gateway.observe(() => apiUpload(client, accounts.api.token, lines)));
      apiUps.push(result);
      upGatewayCpuMs += window.cpuMs;
      await settle();
      sqlUps.push(await sqlUpCpu.during(() => sqlUpload(sql, accounts.sql.userId, lines)));
    }
    partDone("upload");
    const apiUp = medianRun(apiUps);
    reportBulk("upload", "lines", apiUp, medianRun(sqlUps), TARGETS.uploadLinesPerSec, verdicts, { api: apiUps, sql: sqlUps });
    bulkCpu(apiUpCpu, upGatewayCpuMs, sqlUpCpu);
    if (apiUp.available && apiUp.details) out(`  API details (median run): ${JSON.stringify(apiUp.details)}`);
    apiUps.forEach((up, run) => {
      if (up.available && up.rows !== config.uploadLines) problems.push(`upload run ${run + 1}: parsedCount ${up.rows} != ${config.uploadLines} lines`);
    });

    // --- export, on a second gateway started for it ---------------------------
    // A gateway whose first heavy work after starting is a large export used to run a full
    // collection every second or so from then on (V8's heap limits and pretenuring;
    // docs/benchmarks.md, item 21). Without the fix that showed on such a gateway in every run, and
    // on the first one after its exports in none, so the exports go to a fresh one, which then
    // serves the first page, measured like the others.
    const fresh = await startGateway("second gateway");
    const freshClient = new LoopbackClient(fresh.port, config.concurrency);
    cleanups.push({ what: "second gateway's http client", run: async () => freshClient.close() });
    const freshToken = await loginOn(fresh, listUser.email, "second gateway", freshClient);
    out();
    out("The exports run on a second gateway process, started for them.");
    for (const format of EXPORT_FORMATS) {
      out();
      out(`Export of ${config.proxies.toLocaleString("en")} rows (${format}), streamed, the median of ${BULK_RUNS} runs (SQL, API, SQL, ...):`);
      partStarted = cpuTimes();
      const sqlOutCpu = new SideCpu();
      const apiOutCpu = new SideCpu();
      const sqlOuts: BulkResult[] = [];
      const apiOuts: BulkResult[] = [];
      let outGatewayCpuMs = 0;
      for (let run = 0; run < BULK_RUNS; run++) {
        await settle();
        sqlOuts.push(await sqlOutCpu.during(() => sqlExport(sql, listUser.userId, format)));
        const { result, window } = await apiOutCpu.during(() => fresh.observe(() => apiExport(freshClient, freshToken, format)));
        apiOuts.push(result);
        outGatewayCpuMs += window.cpuMs;
      }
      partDone(`export ${format}`);
      reportBulk(`export ${format}`, "rows", medianRun(apiOuts), medianRun(sqlOuts), TARGETS.exportRowsPerSec, verdicts, { api: apiOuts, sql: sqlOuts });
      bulkCpu(apiOutCpu, outGatewayCpuMs, sqlOutCpu);
      for (let run = 0; run < BULK_RUNS; run++) {
        const apiOut = apiOuts[run];
        const sqlOut = sqlOuts[run];
        if (apiOut?.available && apiOut.rows !== config.proxies) problems.push(`export ${format} run ${run + 1}: ${apiOut.rows} rows != ${config.proxies}`);
        if (sqlOut && sqlOut.rows !== config.proxies) problems.push(`export ${format} run ${run + 1}: SQL side read ${sqlOut.rows} rows != ${config.proxies}`);
      }
    }

    // --- the first page on the gateway that ran the exports ------------------
    out();
    out("First page on the second gateway, after its exports (its code warmed up first, as for the list above):");
    listHeader();
    partStarted = cpuTimes();
    const firstPage = LIST_SCENARIOS[0];
    if (!firstPage) throw new Error("no list scenarios");
    const freshPages = new KeepAliveGetClient(fresh.port, { Authorization: `Bearer ${freshToken}` });
    cleanups.push({ what: "second gateway's page client", run: async () => freshPages.close() });
    const warmedFresh = await runLoad(jitWarmup, async (i) => {
      const res = await freshPages.get(firstPage.apiPath(i));
      if (res.status !== 200) throw new Error(`${firstPage.apiPath(i)} answered ${res.status}`);
    });
    if (warmedFresh.errors > 0) problems.push(`warm-up of the second gateway: ${warmedFresh.errors} errors (${warmedFresh.firstError})`);
    await measureList(firstPage, `${firstPage.name} after exports`, { gateway: fresh, pages: freshPages });
    verdicts.splice(anyPageAt, 0, {
      target: `any page: API p99 <= ${TARGETS.anyPageP99Ms} ms`,
      measured: `${ms(worstApiP99)} (slowest single request ${ms(worstApiMax)})`,
      pass: worstApiP99 <= TARGETS.anyPageP99Ms,
    });
    printListNotes();
    partDone("first page after exports");

    // --- verdicts -----------------------------------------------------------
    out();
    out(`Targets${config.smoke ? " (smoke run: sizes too small to judge, informational)" : ""}:`);
    for (const v of verdicts) out(`  ${v.pass ? "PASS" : "FAIL"}  ${v.target.padEnd(52)} ${v.measured}`);
    for (const problem of problems) out(`  ERROR ${problem}`);
    out();
    out(`finished in ${((Date.now() - started) / 1000).toFixed(1)} s, load average ${load()}`);
    out(`CPU time taken by the hypervisor for other guests (steal, /proc/stat): ${stolen.join(", ")}`);
    if (problems.length > 0) return 1;
    return !config.smoke && verdicts.some((v) => !v.pass) ? 1 : 0;
  } finally {
    for (const cleanup of cleanups.reverse()) {
      await cleanup.run().catch((error: unknown) => out(`cleanup of ${cleanup.what} failed: ${error instanceof Error ? error.message : String(error)}`));
    }
  }
}

/** The gateway under test, in its child process. */
interface GatewayProcess {
  port: number;
  flags: string[];
  /** Prefix of its Redis keys, deleted when it stops. */
  queuePrefix: string;
  /** Runs `work` and reports the gateway's GC pauses and event-loop delay meanwhile. */
  observe<T>(work: () => Promise<T>): Promise<{ result: T; window: GatewayWindow }>;
  stop(): Promise<void>;
}

/** The gateway's V8 flags, as `npm start` passes them (scripts/service-node-flags.mjs, beside bench/). */
async function gatewayNodeFlags(): Promise<string[]> {
  const module = (await import(new URL("../../scripts/service-node-flags.mjs", import.meta.url).href)) as { GATEWAY_NODE_FLAGS: string[] };
  return module.GATEWAY_NODE_FLAGS;
}

/** Starts gateway.process.js; `stop()` stops the gateway, deletes its Redis keys and waits for the process. */
async function startGatewayProcess(data: GatewayProcessData, flags: string[]): Promise<GatewayProcess> {
  // A session of its own (setsid), as a service started on its own has: with the kernel's
  // autogroup scheduling each session shares CPU as one group, PostgreSQL's backends each have a
  // session, and a gateway left in the benchmark's session shared one group's share with the load
  // generator, which its raw SQL side does not (docs/benchmarks.md, item 29). Being detached, the
  // gateway does not get the terminal's Ctrl-C: it exits when the benchmark's IPC channel closes.
  const child = fork(new URL("./gateway.process.js", import.meta.url), [], { execArgv: flags, detached: true, stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const next = (): Promise<GatewayProcessMessage> =>
    new Promise((resolve, reject) => {
      const onMessage = (message: GatewayProcessMessage): void => {
        child.off("exit", onExit);
        resolve(message);
      };
      const onExit = (code: number | null, signal: string | null): void => {
        child.off("message", onMessage);
        reject(new Error(`gateway process exited (${signal ?? code})`));
      };
      child.once("message", onMessage);
      child.once("exit", onExit);
    });
  const send = (request: GatewayProcessRequest): void => {
    child.send(request);
  };
  const listening = next();
  send({ kind: "start", data });
  const first = await listening.catch((error: Error) => ({ kind: "failed", message: error.message }) as const);
  if (first.kind !== "listening") {
    child.kill("SIGKILL");
    throw new Error(`gateway process: ${first.kind === "failed" ? first.message : first.kind}`);
  }
  return {
    port: first.port,
    flags,
    queuePrefix: data.queuePrefix,
    async observe(work) {
      const clientLoop = monitorEventLoopDelay({ resolution: 10 });
      send({ kind: "window-start" });
      clientLoop.enable();
      const result = await work();
      clientLoop.disable();
      const reply = next();
      send({ kind: "window-end" });
      const message = await reply;
      if (message.kind !== "window") throw new Error(`gateway process answered ${message.kind} to window-end`);
      return { result, window: { ...message.window, clientLoopDelayMaxMs: clientLoop.max / 1e6 } };
    },
    async stop() {
      const stopped = next();
      send({ kind: "stop" });
      await stopped.catch(() => undefined);
      // It exits once disconnected (writing a --cpu-prof profile then); anything it left open (a timer,
      // a socket) must not keep the benchmark waiting longer than a few seconds.
      const deadline = setTimeout(() => child.exitCode === null && child.signalCode === null && child.kill("SIGTERM"), 5_000);
      await exited;
      clearTimeout(deadline);
    },
  };
}

/**
 * CPU used while one side of a scenario was measured: PostgreSQL's (every
 * postgres process, from /proc) and this process's, the load generator's.
 * On two shared cores a side's latency under load follows the CPU its
 * requests take in all processes, not only in the one under test.
 */
class SideCpu {
  private postgresMs: number | null = 0;
  private clientMs = 0;

  async during<T>(work: () => Promise<T>): Promise<T> {
    const postgresBefore = postgresCpuMs();
    const clientBefore = process.cpuUsage();
    const result = await work();
    const client = process.cpuUsage(clientBefore);
    const postgres = postgresCpuBetween(postgresBefore, postgresCpuMs());
    this.clientMs += (client.user + client.system) / 1000;
    this.postgresMs = postgres === null || this.postgresMs === null ? null : this.postgresMs + postgres;
    return result;
  }

  /** "gateway G + PostgreSQL P + load generator L = T" per request, in µs (the gateway part only when given). */
  perRequest(requests: number, gatewayUs?: number): string {
    return this.split((totalMs) => (totalMs * 1000) / Math.max(requests, 1), gatewayUs);
  }

  /** The same for the whole work, in ms. */
  total(gatewayMs?: number): string {
    return this.split((totalMs) => totalMs, gatewayMs);
  }

  private split(scale: (totalMs: number) => number, gateway?: number): string {
    const parts: [string, number | null][] = [
      ...(gateway === undefined ? [] : [["gateway", gateway] as [string, number]]),
      ["PostgreSQL", this.postgresMs === null ? null : scale(this.postgresMs)],
      ["load generator", scale(this.clientMs)],
    ];
    const known = parts.map(([, v]) => v).filter((v): v is number => v !== null);
    const text = parts.map(([name, v]) => `${name} ${v === null ? "n/a" : Math.round(v)}`).join(" + ");
    return `${text} = ${Math.round(known.reduce((a, b) => a + b, 0))}`;
  }
}

/** Where a bulk part's CPU went on each side, all runs together, in ms (both cores give 2,000 ms a second). */
function bulkCpu(api: SideCpu, gatewayMs: number, raw: SideCpu): void {
  out(`  CPU of the ${BULK_RUNS} runs together, ms: API ${api.total(gatewayMs)}; SQL ${raw.total()}`);
}

/** The run of median time; a run without an answer, if any, since then there is no figure to give. */
function medianRun<T extends BulkResult>(runs: readonly T[]): T {
  const failed = runs.find((run) => !run.available);
  const sorted = [...runs].sort((x, y) => x.ms - y.ms);
  const median = failed ?? sorted[Math.floor(sorted.length / 2)];
  if (!median) throw new Error("no runs");
  return median;
}

function reportBulk(
  name: string,
  unit: string,
  api: BulkResult & { note?: string },
  raw: BulkResult,
  target: number,
  verdicts: Verdict[],
  runs: { api: readonly BulkResult[]; sql: readonly BulkResult[] },
): void {
  const times = (side: readonly BulkResult[]): string => side.map((run) => (run.available ? run.ms.toFixed(1) : "n/a")).join(" / ");
  out(`  runs, ms: SQL ${times(runs.sql)}; API ${times(runs.api)}`);
  const sqlRate = rate(raw.rows, raw.ms);
  out(`  SQL  ${kilo(sqlRate).padStart(6)} ${unit}/s  (${raw.rows.toLocaleString("en")} ${unit} in ${ms(raw.ms)})`);
  if (!api.available) {
    out(`  API  not available: ${api.note ?? "no answer"}`);
    verdicts.push({ target: `${name} >= ${kilo(target)} ${unit}/s`, measured: "not available", pass: false });
    return;
  }
  const apiRate = rate(api.rows, api.ms);
  out(`  API  ${kilo(apiRate).padStart(6)} ${unit}/s  (${api.rows.toLocaleString("en")} ${unit} in ${ms(api.ms)}; time API/SQL ${(api.ms / raw.ms).toFixed(2)})`);
  verdicts.push({ target: `${name} >= ${kilo(target)} ${unit}/s`, measured: `${kilo(apiRate)} ${unit}/s`, pass: apiRate >= target });
}

main(benchConfigFromProcess()).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
