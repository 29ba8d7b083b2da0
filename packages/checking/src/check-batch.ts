import { compileJudgeRegex } from "@roost/global-config";
import type { Logger } from "@roost/observability";
import { requestThroughProxy, type GuardedTlsOptions, type OutboundGuard, type ProxyEndpoint } from "@roost/net";
import type pg from "pg";
import { createAnonymityClassifier, type AnonymityLevel } from "./anonymity.js";
import { probeHttpThroughProxy } from "./http-probe.js";
import { writeCheckResults, type ProtocolCheck, type ProxyVerdict } from "./check-results.repository.js";
import { defaultJudgeMatcher, JUDGE_BODY_LIMIT_BYTES, SAVED_BODY_LIMIT_BYTES } from "./judge-answer.js";
import type { ProbeLimiter } from "./probe-limiter.js";

export const CHECK_PROTOCOLS = ["http", "https", "socks4", "socks5"] as const;
export type CheckProtocol = (typeof CHECK_PROTOCOLS)[number];
const bit = (protocol: CheckProtocol): number => 1 << CHECK_PROTOCOLS.indexOf(protocol);

/** The global configuration's part the checker reads for every batch (live values). */
export interface CheckerSettings {
  intervalSeconds: number;
  standardHeaders: readonly string[];
  proxyHeaders: readonly string[];
  saveResponses: boolean;
}

export interface CheckBatchDeps {
  pool: pg.Pool;
  guard: OutboundGuard;
  probes: ProbeLimiter;
  logger: Logger;
  settings(): CheckerSettings;
  /** The checker's own public addresses (ip_lookup, or learned from a direct judge answer). */
  ownAddresses(): readonly string[];
  /** The request headers the judges should echo (lower-case names): user-agent, accept, accept-encoding. */
  requestHeaders: Readonly<Record<string, string>>;
  /** TLS to https judges (tests trust their own CA here). */
  tls?: GuardedTlsOptions;
  /** Judges found down by their own health probes are not used (JudgeHealth); without it every judge counts as up. */
  judgeHealth?: { isUp(url: string): boolean };
  /** Called once per probe, for metrics. */
  observe?(protocol: CheckProtocol, result: "alive" | "dead" | "skipped", seconds: number): void;
}

export interface CheckBatchOutcome {
  /** Proxies whose rows were written (deleted ones are left out). */
  checked: number[];
  /** Proxies removed by the owner's auto_remove_failing_proxies. */
  removed: number[];
  /** Protocols enabled but not probed: no usable judge for their scheme. */
  skipped: CheckProtocol[];
}

interface OwnerSettings {
  protocols: CheckProtocol[];
  timeoutMs: number;
  retries: number;
  useHttpsForSocks: boolean;
  /** Failed cycles in a row after which a proxy is removed; null when auto-remove is off. */
  autoRemoveAfter: number | null;
}

interface Judge {
  url: string;
  parsed: URL;
  regex: string;
  matches(body: string): boolean;
}

interface ProxyRow {
  id: number;
  ip: string;
  port: number;
  username: string;
  password: string;
  scheme_hint: string | null;
}

const judgeScheme = (protocol: CheckProtocol, useHttpsForSocks: boolean): "http:" | "https:" =>
  protocol === "http" ? "http:" : protocol === "https" ? "https:" : useHttpsForSocks ? "https:" : "http:";

/** How the checker talks to the proxy for a protocol: https is CONNECT through an HTTP proxy. */
const endpointProtocol = (protocol: CheckProtocol): ProxyEndpoint["protocol"] => (protocol === "http" || protocol === "https" ? "http" : protocol);

async function ownerSettings(pool: pg.Pool, userId: number): Promise<{ settings: OwnerSettings; judges: { url: string; regex: string }[] } | null> {
  const [settings, judges] = await Promise.all([
    pool.query<{
      http_protocol: boolean; https_protocol: boolean; socks4_protocol: boolean; socks5_protocol: boolean; timeout_ms: number; retries: number;
      use_https_for_socks: boolean; auto_remove_failing_proxies: boolean; auto_remove_failure_threshold: number;
    }>(
      `SELECT http_protocol, https_protocol, socks4_protocol, socks5_protocol, timeout_ms, retries, use_https_for_socks,
              auto_remove_failing_proxies, auto_remove_failure_threshold
         FROM user_settings WHERE user_id = $1`,
      [userId],
    ),
    pool.query<{ url: string; regex: string }>("SELECT url, regex FROM user_judges WHERE user_id = $1 ORDER BY position, id", [userId]),
  ]);
  const row = settings.rows[0];
  if (!row) return null;
  const enabled = { http: row.http_protocol, https: row.https_protocol, socks4: row.socks4_protocol, socks5: row.socks5_protocol };
  return {
    settings: {
      protocols: CHECK_PROTOCOLS.filter((p) => enabled[p]),
      timeoutMs: row.timeout_ms,
      retries: row.retries,
      useHttpsForSocks: row.use_https_for_socks,
      autoRemoveAfter: row.auto_remove_failing_proxies ? row.auto_remove_failure_threshold : null,
    },
    judges: judges.rows,
  };
}

/** Text PostgreSQL can store: valid UTF-8 (bad bytes replaced) without NUL. */
const storable = (bytes: Buffer): string => bytes.toString("utf8").replaceAll("\u0000", "");

/**
 * Checks one batch of one user's proxies: every protocol enabled in the
 * owner's settings with the owner's judges (round robin per scheme),
 * `timeout` per attempt, `retries` extra attempts; then writes the results
 * set-based. Deleted proxies and users are skipped.
 */
export async function runCheckBatch(deps: CheckBatchDeps, userId: number, proxyIds: readonly number[]): Promise<CheckBatchOutcome> {
  const owner = await ownerSettings(deps.pool, userId);
  if (!owner) return { checked: [], removed: [], skipped: [] };
  const { rows: proxies } = await deps.pool.query<ProxyRow>(
    "SELECT id, ip, port, username, password, scheme_hint FROM proxies WHERE user_id = $1 AND id = ANY($2::int[]) ORDER BY id",
    [userId, [...proxyIds]],
  );
  if (proxies.length === 0) return { checked: [], removed: [], skipped: [] };
  const config = deps.settings();
  const sent = { ...deps.requestHeaders };
  const classify = createAnonymityClassifier(config.proxyHeaders);
  const ownAddresses = deps.ownAddresses();

  // Usable judges per scheme; a regex the engine cannot compile makes its judge unusable, never its proxies dead,
  // and a judge that is down is skipped (its scheme retried soon), never blamed on proxies.
  const judges = new Map<string, Judge[]>();
  const downSchemes = new Set<string>();
  for (const judge of owner.judges) {
    let scheme: string;
    try {
      scheme = new URL(judge.url).protocol;
    } catch {
      continue;
    }
    if (deps.judgeHealth && !deps.judgeHealth.isUp(judge.url)) {
      downSchemes.add(scheme);
      continue;
    }
    let matches: (body: string) => boolean;
    try {
      matches = judge.regex === "default" ? defaultJudgeMatcher(config.standardHeaders, { ...sent, host: new URL(judge.url).host }) : compileJudgeRegex(judge.regex);
    } catch (error) {
      deps.logger.warn("judge skipped: its regex cannot be used", { userId, judge: judge.url, error });
      continue;
    }
    judges.set(scheme, [...(judges.get(scheme) ?? []), { url: judge.url, parsed: new URL(judge.url), regex: judge.regex, matches }]);
  }
  const turn = new Map<string, number>();
  const nextJudge = (scheme: string): Judge | undefined => {
    const list = judges.get(scheme) ?? [];
    const at = turn.get(scheme) ?? 0;
    turn.set(scheme, at + 1);
    return list[at % Math.max(1, list.length)];
  };
  const probed = owner.settings.protocols.filter((protocol) => (judges.get(judgeScheme(protocol, owner.settings.useHttpsForSocks)) ?? []).length > 0);
  const skipped = owner.settings.protocols.filter((protocol) => !probed.includes(protocol));
  const retrySoon = skipped.some((protocol) => downSchemes.has(judgeScheme(protocol, owner.settings.useHttpsForSocks)));
  for (const protocol of skipped) deps.observe?.(protocol, "skipped", 0);
  if (skipped.length > 0) deps.logger.warn("protocols not checked: no usable judge for their scheme", { userId, protocols: skipped });

  const probeOnce = async (proxy: ProxyRow, protocol: CheckProtocol, judge: Judge): Promise<{ alive: boolean; responseMs: number; body: Buffer | null }> => {
    const started = performance.now();
    if (protocol === "http") return probeHttp(proxy, judge, started);
    try {
      const response = await deps.probes.run(() =>
        requestThroughProxy({
          proxy: { protocol: endpointProtocol(protocol), host: proxy.ip, port: proxy.port, username: proxy.username, password: proxy.password },
          url: judge.url,
          guard: deps.guard,
          deadlineMs: owner.settings.timeoutMs,
          headers: sent,
          maxBodyBytes: JUDGE_BODY_LIMIT_BYTES,
          ...(deps.tls && { tls: deps.tls }),
        }),
      );
      const body = response.body.toString("utf8");
      return { alive: response.status >= 200 && response.status < 300 && judge.matches(body), responseMs: Math.round(response.elapsedMs), body: response.body };
    } catch {
      return { alive: false, responseMs: Math.round(performance.now() - started), body: null };
    }
  };

  // The http protocol's probe (absolute-form through the proxy) is written by hand: it is the most frequent one.
  const probeHttp = async (proxy: ProxyRow, judge: Judge, started: number): Promise<{ alive: boolean; responseMs: number; body: Buffer | null }> => {
    let address: string;
    try {
      address = deps.guard.checkLiteral(proxy.ip)?.address ?? (await deps.guard.resolve(proxy.ip)).address;
      const judgeHost = judge.parsed.hostname.replace(/^\[|\]$/g, "");
      deps.guard.checkLiteral(judgeHost);
    } catch {
      return { alive: false, responseMs: Math.round(performance.now() - started), body: null };
    }
    const auth = proxy.username || proxy.password ? `Basic ${Buffer.from(`${proxy.username}:${proxy.password}`).toString("base64")}` : undefined;
    const answer = await deps.probes.run(() =>
      probeHttpThroughProxy({
        address,
        port: proxy.port,
        url: judge.parsed,
        headers: sent,
        ...(auth && { proxyAuthorization: auth }),
        deadlineMs: owner.settings.timeoutMs,
        maxBodyBytes: JUDGE_BODY_LIMIT_BYTES,
      }),
    );
    if (!answer) return { alive: false, responseMs: Math.round(performance.now() - started), body: null };
    const alive = answer.status >= 200 && answer.status < 300 && judge.matches(answer.body.toString("utf8"));
    return { alive, responseMs: Math.round(answer.elapsedMs), body: answer.body };
  };

  const checkProtocol = async (proxy: ProxyRow, protocol: CheckProtocol): Promise<ProtocolCheck> => {
    const scheme = judgeScheme(protocol, owner.settings.useHttpsForSocks);
    let last: ProtocolCheck | null = null;
    const started = performance.now();
    for (let attempt = 0; attempt <= owner.settings.retries; attempt++) {
      const judge = nextJudge(scheme);
      if (!judge) break;
      const result = await probeOnce(proxy, protocol, judge);
      const anonymity: AnonymityLevel = result.alive && result.body ? classify(result.body.toString("utf8"), ownAddresses) : "N/A";
      last = {
        proxyId: proxy.id,
        protocol,
        alive: result.alive,
        attempt,
        responseMs: result.responseMs,
        anonymity,
        judgeUrl: judge.url,
        regex: judge.regex,
        body: config.saveResponses && result.body ? storable(result.body.subarray(0, SAVED_BODY_LIMIT_BYTES)) : null,
      };
      if (result.alive) break;
    }
    if (!last) throw new Error(`no judge for ${protocol}`);
    deps.observe?.(protocol, last.alive ? "alive" : "dead", (performance.now() - started) / 1000);
    return last;
  };

  const order = (proxy: ProxyRow): CheckProtocol[] => {
    const hint = probed.find((protocol) => protocol === proxy.scheme_hint);
    return hint ? [hint, ...probed.filter((protocol) => protocol !== hint)] : probed;
  };
  const perProxy = await Promise.all(proxies.map((proxy) => Promise.all(order(proxy).map((protocol) => checkProtocol(proxy, protocol)))));
  const checks = perProxy.flat();
  const probedMask = probed.reduce((mask, protocol) => mask | bit(protocol), 0);
  const verdicts: ProxyVerdict[] = proxies.map((proxy, index) => {
    const results = perProxy[index] ?? [];
    const alive = results.filter((r) => r.alive).sort((a, b) => a.responseMs - b.responseMs);
    const best = alive[0];
    return {
      proxyId: proxy.id,
      probedMask,
      aliveMask: alive.reduce((mask, r) => mask | bit(r.protocol as CheckProtocol), 0),
      responseMs: best?.responseMs ?? 0,
      anonymity: best?.anonymity ?? "N/A",
      attempt: best?.attempt ?? 0,
      // Protocols without any judge are left out; a cycle with judges down is not complete, so it does not count.
      failedCycle: probed.length > 0 && alive.length === 0 && !retrySoon,
      retrySoon,
    };
  });
  const written = await writeCheckResults(deps.pool, userId, checks, verdicts, {
    intervalSeconds: config.intervalSeconds,
    autoRemoveAfter: owner.settings.autoRemoveAfter,
    protocols: owner.settings.protocols,
  });
  if (written.removed.length > 0) deps.logger.info("failing proxies removed", { userId, proxies: written.removed.length, threshold: owner.settings.autoRemoveAfter });
  return { checked: written.updated, removed: written.removed, skipped };
}
