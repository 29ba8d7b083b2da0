import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import type net from "node:net";
import type pg from "pg";
import { createDatabase } from "@roost/db";
import { freePort, startTinyproxy, waitFor, type ProxyPeer } from "@roost/testkit";
import { createBenchDatabase } from "./bench-database.js";
import { forkIpcChild, type IpcChild } from "./child-process.js";
import { cpuTimes } from "./host.js";
import { finishReport, load, out, runPart, type Verdict } from "./report.js";
import { KeepAliveGetClient, mergeSamples, percentile, runLoad, runPaced, type Samples } from "./load.js";
import { startNginxUpstream, type NginxUpstream } from "./nginx-upstream.js";
import { deleteKeys } from "./redis-keys.js";
import type { RelayKind, RelayMessage, RelayRequest } from "./relay-side.process.js";
import { rotatorBenchConfigFromProcess, type RotatorBenchConfig } from "./rotator-bench.config.js";
import type { RotatorMessage, RotatorRequest, RotatorStart } from "./rotator.process.js";
import { drain, openTunnel } from "./tunnel-client.js";

/**
 * `npm run bench -- --part=rotator`: requests through Roost's rotator (its own process) beside the
 * upstream alone, a raw TCP relay, a node:http forward proxy and proxy-chain, all on one nginx
 * upstream in front of an nginx origin; CONNECT MB/s through tinyproxy; RSS per idle tunnel
 * (docs/benchmarks.md, "Rotator").
 */

const TARGETS = {
  /** Roost's requests/s over proxy-chain's. */
  overProxyChain: 2,
  /** Roost's requests/s over the raw TCP relay's. */
  overRaw: 0.5,
  /** Roost's p99 over the upstream alone's. */
  p99OverUpstream: 2,
  /** Rotator RSS per idle CONNECT tunnel, KiB. */
  idleTunnelKiB: 32,
};

type Side = "upstream" | "raw" | "node-http" | "proxy-chain" | "roost";
/** Side order of the first run; each next run starts one side later. */
const SIDES: readonly Side[] = ["upstream", "raw", "node-http", "proxy-chain", "roost"];
const LABELS: Record<Side, string> = {
  upstream: "upstream alone (nginx)",
  raw: "raw TCP relay",
  "node-http": "node:http proxy",
  "proxy-chain": "proxy-chain 3.0.1",
  roost: "Roost rotator",
};
type TransferSide = "tinyproxy" | "roost";
const TRANSFER_SIDES: readonly TransferSide[] = ["tinyproxy", "roost"];
const TRANSFER_LABELS: Record<TransferSide, string> = { tinyproxy: "tinyproxy alone", roost: "Roost -> tinyproxy" };

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const ms = (value: number): string => (Number.isNaN(value) ? "n/a" : `${value.toFixed(2)} ms`);
const rotated = <T>(items: readonly T[], by: number): T[] => items.map((_, i) => items[(i + by) % items.length]).filter((item): item is T => item !== undefined);

/** Resident memory of a process, bytes (VmRSS of /proc/<pid>/status). */
function rssBytes(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "latin1"))?.[1];
  if (kb === undefined) throw new Error(`no VmRSS for ${pid}`);
  return Number(kb) * 1024;
}


interface Helper {
  port: number;
  cpuUs(): Promise<number>;
  stop(): Promise<void>;
}

async function startHelper(relay: RelayKind, upstreamPort?: number, bytes?: number): Promise<Helper> {
  const child: IpcChild<RelayRequest, RelayMessage> = forkIpcChild(new URL("./relay-side.process.js", import.meta.url), { detached: true });
  const ready = await child.ask({ kind: "start", relay, ...(upstreamPort !== undefined ? { upstreamPort } : {}), ...(bytes !== undefined ? { bytes } : {}) });
  if (ready.kind !== "ready") {
    await child.stop();
    throw new Error(`${relay}: ${ready.kind === "failed" ? ready.message : ready.kind}`);
  }
  return {
    port: ready.port,
    async cpuUs() {
      const usage = await child.ask({ kind: "usage" });
      if (usage.kind !== "usage") throw new Error(`${relay} answered ${usage.kind}`);
      return usage.cpuUs;
    },
    stop: () => child.stop(),
  };
}

interface RotatorUsage {
  cpuUs: number;
  heapUsed: number;
  external: number;
  openSockets: number;
}

interface RotatorProcess {
  pid: number;
  usage(): Promise<RotatorUsage>;
  stop(): Promise<void>;
}

async function startRotator(config: RotatorBenchConfig, start: RotatorStart, run: number): Promise<RotatorProcess> {
  const execArgv = config.cpuProfileDir ? ["--cpu-prof", `--cpu-prof-dir=${config.cpuProfileDir}`, `--cpu-prof-name=rotator-run${run + 1}.cpuprofile`] : [];
  const child: IpcChild<RotatorRequest, RotatorMessage> = forkIpcChild(new URL("./rotator.process.js", import.meta.url), { detached: true, execArgv });
  const ready = await child.ask({ kind: "start", start });
  if (ready.kind !== "ready") {
    await child.stop();
    throw new Error(`rotator: ${ready.kind === "failed" ? ready.message : ready.kind}`);
  }
  return {
    pid: child.pid,
    async usage() {
      const usage = await child.ask({ kind: "usage" });
      if (usage.kind !== "usage") throw new Error(`rotator answered ${usage.kind}`);
      return usage;
    },
    async stop() {
      await child.ask({ kind: "stop" });
      await child.stop();
    },
  };
}

interface Rig {
  upstream: NginxUpstream;
  tinyproxy: ProxyPeer;
  raw: Helper;
  nodeHttp: Helper;
  proxyChain: Helper;
  source: Helper;
  hold: Helper;
  /** A node:http proxy of its own as the idle tunnels' upstream (tinyproxy holds 256 clients at most). */
  tunnelUpstream: Helper;
  /** Listen ports of the three rotators. */
  requestsPort: number;
  transferPort: number;
  idlePort: number;
}

/** A user owning one proxy (alive on http) and one open http rotator on `listenPort`. */
async function seedRotator(pool: pg.Pool, instanceId: string, name: string, upstreamPort: number, listenPort: number): Promise<void> {
  const { rows } = await pool.query<{ id: number }>("INSERT INTO users (email, password_hash) VALUES ('rotator-bench-' || gen_random_uuid() || '@example.com', 'x') RETURNING id");
  const userId = rows[0]?.id;
  if (userId === undefined) throw new Error("no user");
  await pool.query("INSERT INTO proxies (user_id, ip, port, alive, alive_protocols) VALUES ($1, '127.0.0.1', $2, true, 1)", [userId, upstreamPort]);
  await pool.query(
    `INSERT INTO rotating_proxies (user_id, name, instance_id, protocol, listen_protocol, listen_port, auth_required, reputation_labels)
     VALUES ($1, $2, $3, 'http', 'http', $4, false, '{}')`,
    [userId, name, instanceId, listenPort],
  );
}

interface SideRun {
  samples: Samples;
  ms: number;
  /** CPU of the proxy process (none for the upstream alone), µs. */
  proxyCpuUs: number | null;
  /** CPU of the load generator (this process), µs. */
  clientCpuUs: number;
}

const rate = (r: SideRun): number => (r.samples.latenciesMs.length * 1000) / r.ms;

interface RequestsRun {
  /** Closed loop: `concurrency` connections, the next request as soon as the answer is in. */
  closed: Map<Side, SideRun>;
  /** Open loop: `pacedRate` requests a second offered to every side. */
  paced: Map<Side, Samples>;
}

/**
 * One run of the request sides: each warmed up, then measured in `rounds` short rounds (the
 * order reversed each round, so a burst of other work on the host hits every side alike), each
 * round a closed-loop slice of every side, then a paced slice of every side.
 */
async function requestsRun(config: RotatorBenchConfig, rig: Rig, rotator: RotatorProcess, run: number): Promise<RequestsRun> {
  const ports: Record<Side, number> = { upstream: rig.upstream.proxyPort, raw: rig.raw.port, "node-http": rig.nodeHttp.port, "proxy-chain": rig.proxyChain.port, roost: rig.requestsPort };
  const cpu: Record<Side, (() => Promise<number>) | null> = {
    upstream: null,
    raw: () => rig.raw.cpuUs(),
    "node-http": () => rig.nodeHttp.cpuUs(),
    "proxy-chain": () => rig.proxyChain.cpuUs(),
    roost: async () => (await rotator.usage()).cpuUs,
  };
  const clients = new Map(SIDES.map((side) => [side, new KeepAliveGetClient(ports[side], {})]));
  const parts = new Map<Side, SideRun[]>(SIDES.map((side) => [side, []]));
  const paced = new Map<Side, Samples>();
  const order = rotated(SIDES, run);
  const taskFor = (client: KeepAliveGetClient) => async (): Promise<void> => {
    const res = await client.get(rig.upstream.url);
    if (res.status !== 200 || res.body.length !== config.bodyBytes) throw new Error(`answered ${res.status} with ${res.body.length} bytes`);
  };
  try {
    for (let round = 0; round < config.rounds; round++) {
      for (const side of round % 2 === 0 ? order : [...order].reverse()) {
        const client = clients.get(side);
        if (!client) continue;
        const task = taskFor(client);
        if (round === 0) await runLoad({ concurrency: config.concurrency, requests: 0, minMs: config.warmupMs, maxMs: config.warmupMs }, task);
        const proxyBefore = (await cpu[side]?.()) ?? null;
        const clientBefore = process.cpuUsage();
        const started = performance.now();
        const samples = await runLoad({ concurrency: config.concurrency, requests: 0, minMs: config.roundMs, maxMs: config.roundMs }, task);
        const elapsed = performance.now() - started;
        const client_ = process.cpuUsage(clientBefore);
        const proxyAfter = (await cpu[side]?.()) ?? null;
        parts.get(side)?.push({ samples, ms: elapsed, proxyCpuUs: proxyBefore === null || proxyAfter === null ? null : proxyAfter - proxyBefore, clientCpuUs: client_.user + client_.system });
      }
      for (const side of round % 2 === 0 ? order : [...order].reverse()) {
        const client = clients.get(side);
        if (!client) continue;
        const slice = await runPaced({ connections: config.concurrency, rate: config.pacedRate, durationMs: config.pacedMs }, taskFor(client));
        paced.set(side, mergeSamples([paced.get(side) ?? { latenciesMs: [], errors: 0 }, slice]));
      }
    }
  } finally {
    for (const client of clients.values()) client.close();
  }
  const merged = new Map<Side, SideRun>();
  for (const [side, list] of parts) {
    merged.set(side, {
      samples: mergeSamples(list.map((part) => part.samples)),
      ms: list.reduce((sum, part) => sum + part.ms, 0),
      proxyCpuUs: list.some((part) => part.proxyCpuUs === null) ? null : list.reduce((sum, part) => sum + (part.proxyCpuUs ?? 0), 0),
      clientCpuUs: list.reduce((sum, part) => sum + part.clientCpuUs, 0),
    });
  }
  return { closed: merged, paced };
}

/** MB/s of `transferTunnels` downloads at once from the source, through one proxy port. */
async function transferRun(config: RotatorBenchConfig, rig: Rig, run: number, problems: string[]): Promise<Map<TransferSide, number>> {
  const ports: Record<TransferSide, number> = { tinyproxy: rig.tinyproxy.port, roost: rig.transferPort };
  const result = new Map<TransferSide, number>();
  for (const side of rotated(TRANSFER_SIDES, run)) {
    const started = performance.now();
    const bytes = await Promise.all(Array.from({ length: config.transferTunnels }, () => drain(ports[side], rig.source.port)));
    const seconds = (performance.now() - started) / 1000;
    const total = bytes.reduce((a, b) => a + b, 0);
    if (total !== config.transferTunnels * config.transferBytes) problems.push(`transfer run ${run + 1}, ${TRANSFER_LABELS[side]}: ${total} bytes, expected ${config.transferTunnels * config.transferBytes}`);
    result.set(side, total / 1e6 / seconds);
  }
  return result;
}

interface IdleRun {
  tunnels: number;
  rssDelta: number;
  heapDelta: number;
  externalDelta: number;
  openMs: number;
}

/** Opens `count` tunnels through the idle rotator, at most `openAtOnce` being opened at a time. */
async function openTunnels(config: RotatorBenchConfig, rig: Rig, count: number, into: net.Socket[]): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      into.push((await openTunnel(rig.idlePort, rig.hold.port)).socket);
    }
  };
  await Promise.all(Array.from({ length: Math.min(config.openAtOnce, count) }, worker));
}

async function idleRun(config: RotatorBenchConfig, rig: Rig, rotator: RotatorProcess): Promise<IdleRun> {
  const sockets: net.Socket[] = [];
  const closeAll = async (): Promise<void> => {
    for (const socket of sockets.splice(0)) socket.destroy();
    await waitFor(async () => (await rotator.usage()).openSockets === 0, { timeoutMs: 60_000, what: "rotator tunnels closed" });
  };
  try {
    // Warm-up: the tunnel path's code and the process's lazily made structures exist before the first reading.
    await openTunnels(config, rig, 100, sockets);
    await closeAll();
    await sleep(500);
    const rssBefore = rssBytes(rotator.pid);
    const before = await rotator.usage();
    const started = performance.now();
    await openTunnels(config, rig, config.idleTunnels, sockets);
    const openMs = performance.now() - started;
    await waitFor(async () => (await rotator.usage()).openSockets >= 2 * config.idleTunnels, { timeoutMs: 60_000, what: "every tunnel's two sockets open in the rotator" });
    await sleep(1_000);
    const rssAfter = rssBytes(rotator.pid);
    const after = await rotator.usage();
    return { tunnels: sockets.length, rssDelta: rssAfter - rssBefore, heapDelta: after.heapUsed - before.heapUsed, externalDelta: after.external - before.external, openMs };
  } finally {
    await closeAll();
  }
}

async function main(config: RotatorBenchConfig): Promise<number> {
  const startedAt = Date.now();
  const verdicts: Verdict[] = [];
  const problems: string[] = [];
  out(`Roost rotator benchmark${config.smoke ? " (smoke)" : ""}`);
  out(`node ${process.version}, ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, load average ${load()} (other work on the machine skews every number)`);
  const steal = cpuTimes();
  const prefix = `roost-bench-${randomBytes(4).toString("hex")}`;
  const instanceId = `bench-${randomBytes(4).toString("hex")}`;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "roost-rotator-bench-"));
  const benchDatabase = await createBenchDatabase(config.adminDatabaseUrl);
  const database = createDatabase({ databaseUrl: benchDatabase.url, applicationName: "roost-bench" });
  const stops: (() => Promise<void>)[] = [];
  try {
    const upstream = await startNginxUpstream(config.bodyBytes);
    stops.push(() => upstream.stop());
    const tinyproxy = await startTinyproxy({ egressAddress: "127.0.0.1" });
    stops.push(() => tinyproxy.stop());
    const helpers = await Promise.all([
      startHelper("raw-relay", upstream.proxyPort),
      startHelper("node-http", upstream.proxyPort),
      startHelper("proxy-chain", upstream.proxyPort),
      startHelper("source", undefined, config.transferBytes),
      startHelper("hold"),
    ]);
    for (const helper of helpers) stops.push(() => helper.stop());
    const [raw, nodeHttp, proxyChain, source, hold] = helpers;
    if (!raw || !nodeHttp || !proxyChain || !source || !hold) throw new Error("helpers missing");
    const tunnelUpstream = await startHelper("node-http", upstream.proxyPort);
    stops.push(() => tunnelUpstream.stop());
    const [requestsPort, transferPort, idlePort] = [await freePort(), await freePort(), await freePort()];
    const rig: Rig = { upstream, tinyproxy, raw, nodeHttp, proxyChain, source, hold, tunnelUpstream, requestsPort, transferPort, idlePort };
    await seedRotator(database.pool, instanceId, "requests", upstream.proxyPort, requestsPort);
    await seedRotator(database.pool, instanceId, "transfer", tinyproxy.port, transferPort);
    await seedRotator(database.pool, instanceId, "idle", tunnelUpstream.port, idlePort);
    const ports = [requestsPort, transferPort, idlePort];
    const start: RotatorStart = {
      databaseUrl: benchDatabase.url,
      redisUrl: config.redisUrl,
      passwordKey: "rotator-bench-key",
      env: {
        QUEUE_PREFIX: prefix,
        DATA_DIR: dataDir,
        ALLOW_PRIVATE_NETWORK_TARGETS: "true",
        ROTATOR_INSTANCE_ID: instanceId,
        ROTATING_PROXY_LISTEN_HOST: "127.0.0.1",
        ROTATING_PROXY_PORT_START: String(Math.min(...ports)),
        ROTATING_PROXY_PORT_END: String(Math.max(...ports)),
      },
    };
    out(
      `upstream: nginx ${upstream.proxyPort} proxying absolute-form requests to an nginx origin (${config.bodyBytes}-byte file, kept-alive), each one worker; ` +
        `tinyproxy ${tinyproxy.port}; the rotator, the relays, proxy-chain and the tunnel targets each in a process (and session) of their own`,
    );
    out();

    const requestRuns: Map<Side, SideRun>[] = [];
    const pacedRuns: Map<Side, Samples>[] = [];
    const transferRuns: Map<TransferSide, number>[] = [];
    const idleRuns: IdleRun[] = [];
    const runLines: string[] = [];
    for (let run = 0; run < config.runs; run++) {
      const loadAtStart = load();
      const rotator = await startRotator(config, start, run);
      try {
        const idle = await idleRun(config, rig, rotator);
        if (idle.tunnels !== config.idleTunnels) problems.push(`idle run ${run + 1}: ${idle.tunnels} tunnels open, expected ${config.idleTunnels}`);
        idleRuns.push(idle);
        const { closed: requests, paced } = await requestsRun(config, rig, rotator, run);
        for (const [side, result] of requests) if (result.samples.errors > 0) problems.push(`requests run ${run + 1}, ${LABELS[side]}: ${result.samples.errors} errors (${result.samples.firstError ?? ""})`);
        for (const [side, samples] of paced) if (samples.errors > 0) problems.push(`paced run ${run + 1}, ${LABELS[side]}: ${samples.errors} errors (${samples.firstError ?? ""})`);
        requestRuns.push(requests);
        pacedRuns.push(paced);
        const transfer = await transferRun(config, rig, run, problems);
        transferRuns.push(transfer);
        runLines.push(
          `  run ${run + 1} (load average ${loadAtStart} at its start): ` +
            SIDES.map((side) => {
              const r = requests.get(side);
              return `${LABELS[side]} ${r ? Math.round(rate(r)) : "n/a"}/s p99 ${ms(r ? percentile(r.samples.latenciesMs, 99) : Number.NaN)}`;
            }).join(", ") +
            `; ${TRANSFER_SIDES.map((side) => `${TRANSFER_LABELS[side]} ${Math.round(transfer.get(side) ?? 0)} MB/s`).join(", ")}` +
            `; idle ${((idle.rssDelta / idle.tunnels) / 1024).toFixed(1)} KiB/tunnel`,
        );
      } finally {
        await rotator.stop();
      }
    }

    out(
      `Requests: GET of the ${config.bodyBytes}-byte file in absolute form, ${config.concurrency} kept-alive connections, one request in flight on each, ` +
        `per side and run ${config.warmupMs} ms warm-up then ${config.rounds} rounds of ${config.roundMs} ms closed loop and ${config.pacedMs} ms at ${config.pacedRate} req/s offered (order reversed each round, rotated each run), ${config.runs} run(s); medians over runs:`,
    );
    out(`${"side".padEnd(26)}${"req/s".padStart(9)}${"p50".padStart(11)}${"p99".padStart(11)}${"proxy µs/req".padStart(14)}${"client µs/req".padStart(15)}${`p50 @${config.pacedRate}/s`.padStart(15)}${`p99 @${config.pacedRate}/s`.padStart(15)}`);
    for (const side of SIDES) {
      const runs = requestRuns.map((r) => r.get(side)).filter((r): r is SideRun => r !== undefined);
      const cpuRuns = runs.filter((r) => r.proxyCpuUs !== null);
      out(
        `${LABELS[side].padEnd(26)}${Math.round(median(runs.map(rate))).toString().padStart(9)}` +
          `${ms(median(runs.map((r) => percentile(r.samples.latenciesMs, 50)))).padStart(11)}${ms(median(runs.map((r) => percentile(r.samples.latenciesMs, 99)))).padStart(11)}` +
          `${(cpuRuns.length > 0 ? Math.round(median(cpuRuns.map((r) => (r.proxyCpuUs ?? 0) / r.samples.latenciesMs.length))).toString() : "-").padStart(14)}` +
          `${Math.round(median(runs.map((r) => r.clientCpuUs / r.samples.latenciesMs.length))).toString().padStart(15)}` +
          `${ms(median(pacedRuns.map((r) => percentile(r.get(side)?.latenciesMs ?? [], 50)))).padStart(15)}${ms(median(pacedRuns.map((r) => percentile(r.get(side)?.latenciesMs ?? [], 99)))).padStart(15)}`,
      );
    }
    const perRun = (f: (r: Map<Side, SideRun>) => number): number[] => requestRuns.map(f);
    const sideRate = (r: Map<Side, SideRun>, side: Side): number => {
      const result = r.get(side);
      return result ? rate(result) : Number.NaN;
    };
    const sideP99 = (r: Map<Side, SideRun>, side: Side): number => percentile(r.get(side)?.samples.latenciesMs ?? [], 99);
    const overChain = perRun((r) => sideRate(r, "roost") / sideRate(r, "proxy-chain"));
    const overRaw = perRun((r) => sideRate(r, "roost") / sideRate(r, "raw"));
    const p99Ratio = perRun((r) => sideP99(r, "roost") / sideP99(r, "upstream"));
    const list = (values: number[]): string => values.map((v) => v.toFixed(2)).join(", ");
    out(`  Roost over proxy-chain (req/s) per run: ${list(overChain)}; over the raw relay: ${list(overRaw)}; Roost p99 over the upstream alone's: ${list(p99Ratio)}`);
    const pacedP99 = (r: Map<Side, Samples>, side: Side): number => percentile(r.get(side)?.latenciesMs ?? [], 99);
    out(
      `  at ${config.pacedRate} req/s offered to every side (open loop, ${config.rounds} x ${config.pacedMs} ms each; its p99 is mostly the host's stalls): Roost p99 over the upstream alone's per run: ${list(pacedRuns.map((r) => pacedP99(r, "roost") / pacedP99(r, "upstream")))}; ` +
        `the raw relay's: ${list(pacedRuns.map((r) => pacedP99(r, "raw") / pacedP99(r, "upstream")))}; proxy-chain's: ${list(pacedRuns.map((r) => pacedP99(r, "proxy-chain") / pacedP99(r, "upstream")))}`,
    );
    out(`  raw relay p99 over the upstream alone's (closed loop) per run: ${list(perRun((r) => sideP99(r, "raw") / sideP99(r, "upstream")))}`);
    out(`  node:http proxy over proxy-chain per run: ${list(perRun((r) => sideRate(r, "node-http") / sideRate(r, "proxy-chain")))}; raw relay over the upstream alone: ${list(perRun((r) => sideRate(r, "raw") / sideRate(r, "upstream")))}`);
    out();
    out(`CONNECT transfer: ${config.transferTunnels} tunnels at once, each ${config.transferBytes / 2 ** 20} MiB from a source server (a process of its own) to this process, MB/s (10^6 bytes):`);
    for (const side of TRANSFER_SIDES) out(`  ${TRANSFER_LABELS[side].padEnd(22)} ${Math.round(median(transferRuns.map((r) => r.get(side) ?? 0)))} MB/s (runs: ${transferRuns.map((r) => Math.round(r.get(side) ?? 0)).join(", ")})`);
    const transferRatio = transferRuns.map((r) => (r.get("roost") ?? 0) / (r.get("tinyproxy") ?? Number.NaN));
    out(`  Roost -> tinyproxy over tinyproxy alone per run: ${list(transferRatio)}`);
    out();
    out(`Idle tunnels: ${config.idleTunnels.toLocaleString("en")} CONNECT tunnels held open through the rotator (client and upstream socket each), opened ${config.openAtOnce} at a time after a warm-up of 100, a fresh rotator process per run:`);
    for (const [i, idle] of idleRuns.entries()) {
      out(
        `  run ${i + 1}: RSS +${(idle.rssDelta / 2 ** 20).toFixed(1)} MiB = ${(idle.rssDelta / idle.tunnels / 1024).toFixed(1)} KiB per tunnel ` +
          `(V8 heap ${(idle.heapDelta / idle.tunnels / 1024).toFixed(1)} KiB, external ${(idle.externalDelta / idle.tunnels / 1024).toFixed(1)} KiB per tunnel); opened in ${(idle.openMs / 1000).toFixed(1)} s`,
      );
    }
    for (const line of runLines) out(line);

    const kibPerTunnel = median(idleRuns.map((idle) => idle.rssDelta / idle.tunnels / 1024));
    verdicts.push({ target: `Roost req/s >= ${TARGETS.overProxyChain} x proxy-chain`, measured: `${median(overChain).toFixed(2)} x`, pass: median(overChain) >= TARGETS.overProxyChain });
    verdicts.push({ target: `Roost req/s >= ${TARGETS.overRaw} x raw TCP relay`, measured: `${median(overRaw).toFixed(2)} x`, pass: median(overRaw) >= TARGETS.overRaw });
    verdicts.push({ target: `Roost p99 <= ${TARGETS.p99OverUpstream} x upstream alone p99 (${config.concurrency} connections, closed loop)`, measured: `${median(p99Ratio).toFixed(2)} x`, pass: median(p99Ratio) <= TARGETS.p99OverUpstream });
    verdicts.push({ target: `rotator RSS per idle tunnel <= ${TARGETS.idleTunnelKiB} KiB`, measured: `${kibPerTunnel.toFixed(1)} KiB`, pass: kibPerTunnel <= TARGETS.idleTunnelKiB });
  } finally {
    for (const stop of stops.reverse()) await stop().catch((error: unknown) => problems.push(`stop: ${String(error)}`));
    await database.close();
    await benchDatabase.drop();
    await deleteKeys(config.redisUrl, prefix);
    await rm(dataDir, { recursive: true, force: true });
  }
  return finishReport({ verdicts, problems, smoke: config.smoke, smokeReason: "too short to judge", targetWidth: 72, startedAt: startedAt, steal });
}

runPart("rotator", () => main(rotatorBenchConfigFromProcess()));
