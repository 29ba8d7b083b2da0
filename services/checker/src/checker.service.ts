import { randomBytes } from "node:crypto";
import {
  batchesAtOnce,
  ensureStatisticsPartitions,
  JudgeHealth,
  OwnAddress,
  ProbeLimiter,
  runCheckBatch,
  runCheckTick,
  type CheckBatchDeps,
} from "@roost/checking";
import type { Database } from "@roost/db";
import { createGlobalConfigStore, type GlobalConfig } from "@roost/global-config";
import { OutboundGuard } from "@roost/net";
import type { Logger, Metrics } from "@roost/observability";
import { CHECK_TICK_SECONDS, checkQueue, createConsumer, createProducer, createRedisConnection, type Consumer } from "@roost/queue";
import type { CheckerConfig } from "./config/checker.config.js";

export interface CheckerDeps {
  config: CheckerConfig;
  db: Database;
  redisUrl: string;
  logger: Logger;
  metrics: Metrics;
  /** Sent in the User-Agent judges echo. */
  buildVersion?: string;
}

export interface CheckerService {
  start(): Promise<void>;
  /** Stops taking batches, lets running ones finish (their proxies are leased either way), closes connections. */
  stop(): Promise<void>;
  /** Redis channel where each batch's checked proxy ids are published, per user (docs/checker.md). */
  readonly checkedChannel: string;
}

/** How often the checker's own address is looked up again. */
const OWN_ADDRESS_REFRESH_MS = 3600_000;

/**
 * The checker: consumes the `check` queue, where `check-tick` (a job
 * scheduler this service registers, and wake-ups after uploads) claims due
 * proxies into `check-batch` jobs, and each batch is probed and written.
 */
export function createCheckerService(deps: CheckerDeps): CheckerService {
  const logger = deps.logger.child({ service: "checker" });
  const { config } = deps;
  const prefix = `${config.QUEUE_PREFIX}:`;
  const checkedChannel = `${prefix}proxies-checked`;
  const commands = createRedisConnection(deps.redisUrl, "client");
  const subscriber = createRedisConnection(deps.redisUrl, "subscriber");
  const producerConnection = createRedisConnection(deps.redisUrl, "producer");
  const workerConnection = createRedisConnection(deps.redisUrl, "worker");
  const checks = createProducer(checkQueue, { connection: producerConnection, prefix: config.QUEUE_PREFIX });
  const globalConfig = createGlobalConfigStore({ prisma: deps.db.prisma, redis: commands, subscriber, prefix, logger });
  const guard = new OutboundGuard({ allowPrivateNetworkTargets: config.ALLOW_PRIVATE_NETWORK_TARGETS });
  const probes = new ProbeLimiter(512, config.CHECKER_MAX_SOCKETS);
  const ownAddress = new OwnAddress(guard, logger);
  const judgeUp = deps.metrics.gauge("svc_judge_up", "1 when the judge answers a direct request, 0 when it is down (label scheme://host:port; `other`: the share up of judges past the first 100 user judges)", ["judge"]);
  const autoRemoved = deps.metrics.counter("svc_proxies_auto_removed_total", "Proxies removed by their owner's auto_remove_failing_proxies");
  const judgeHealth = new JudgeHealth(guard, logger, { report: (label, up) => judgeUp.set({ judge: label }, up) });
  let judgeTimer: NodeJS.Timeout | undefined;
  let consumer: Consumer | null = null;
  let refreshTimer: NodeJS.Timeout | undefined;
  let partitionsDay = "";
  const unsubscribe: (() => void)[] = [];

  const checksTotal = deps.metrics.counter("svc_checks_total", "Protocol checks by protocol and result (alive, dead, skipped: no usable judge)", ["protocol", "result"]);
  const checkDuration = deps.metrics.histogram("svc_check_duration_seconds", "Time to decide one protocol check, retries included, by protocol", ["protocol"], [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]);
  const queueWaiting = deps.metrics.gauge("svc_check_queue_waiting", "check-batch jobs waiting in the queue, as the last tick saw them");
  const inFlight = deps.metrics.gauge("svc_check_in_flight", "Probes running in this process");
  inFlight.set(0);

  // Unique per process, so a judge's echo of it cannot come from anything but this request.
  const requestHeaders = {
    "user-agent": `Roost/${deps.buildVersion ?? "dev"} checker (${randomBytes(6).toString("hex")})`,
    accept: "text/html,text/plain;q=0.9,*/*;q=0.8",
    "accept-encoding": "identity",
  };
  const settingsOf = (current: GlobalConfig) => ({
    intervalSeconds: current.checker.interval_seconds,
    standardHeaders: current.checker.standard_headers,
    proxyHeaders: current.checker.proxy_headers,
    saveResponses: current.checker.save_responses,
  });
  const batchDeps: CheckBatchDeps = {
    pool: deps.db.pool,
    guard,
    probes,
    logger,
    settings: () => settingsOf(globalConfig.current()),
    ownAddresses: () => ownAddress.current(),
    requestHeaders,
    judgeHealth,
    observe: (protocol, result, seconds) => {
      inFlight.set(probes.inFlight);
      checksTotal.inc({ protocol, result });
      if (result !== "skipped") checkDuration.observe({ protocol }, seconds);
    },
  };

  const workerConcurrency = (probesAtOnce: number): number => batchesAtOnce(Math.min(probesAtOnce, config.CHECKER_MAX_SOCKETS), config.CHECKER_BATCH_SIZE);
  const refreshOwnAddress = (): void => {
    const current = globalConfig.current();
    void ownAddress.refresh(current.checker.ip_lookup, current.checker.judges.filter((j) => j.url.startsWith("http")).map((j) => j.url)).catch((error: unknown) =>
      logger.warn("own address not refreshed", { error }),
    );
  };
  const probeJudges = async (): Promise<void> => {
    try {
      const { rows } = await deps.db.pool.query<{ url: string }>("SELECT DISTINCT url FROM user_judges ORDER BY url LIMIT 1000");
      const global = globalConfig.current().checker.judges.map((j) => j.url);
      await judgeHealth.probeAll(global, rows.map((r) => r.url).filter((url) => !global.includes(url)));
    } catch (error) {
      logger.warn("judges not probed", { error });
    }
  };
  const ensurePartitions = async (): Promise<void> => {
    const today = new Date().toISOString().slice(0, 10);
    if (today === partitionsDay) return;
    await ensureStatisticsPartitions(deps.db.pool);
    partitionsDay = today;
  };

  return {
    checkedChannel,
    async start() {
      await globalConfig.start();
      await ensurePartitions();
      probes.setLimit(globalConfig.current().checker.concurrency);
      unsubscribe.push(
        globalConfig.onChange((next, previous) => {
          probes.setLimit(next.checker.concurrency);
          if (consumer) consumer.worker.concurrency = workerConcurrency(next.checker.concurrency);
          if (next.checker.ip_lookup !== previous.checker.ip_lookup || JSON.stringify(next.checker.judges) !== JSON.stringify(previous.checker.judges)) refreshOwnAddress();
        }),
      );
      refreshOwnAddress();
      refreshTimer = setInterval(refreshOwnAddress, OWN_ADDRESS_REFRESH_MS);
      refreshTimer.unref();
      await probeJudges();
      judgeTimer = setInterval(() => void probeJudges(), config.CHECKER_JUDGE_HEALTH_SECONDS * 1000);
      judgeTimer.unref();
      consumer = createConsumer(
        checkQueue,
        {
          "check-tick": async () => {
            await ensurePartitions();
            const result = await runCheckTick(
              { pool: deps.db.pool, checks, logger },
              { batchSize: config.CHECKER_BATCH_SIZE, maxQueuedBatches: config.CHECKER_MAX_QUEUED_BATCHES, leaseMs: config.CHECKER_LEASE_SECONDS * 1000 },
            );
            queueWaiting.set(result.waiting + result.batches);
            return result;
          },
          "check-batch": async ({ userId, proxyIds }) => {
            inFlight.set(probes.inFlight);
            const outcome = await runCheckBatch(batchDeps, userId, proxyIds);
            inFlight.set(probes.inFlight);
            if (outcome.removed.length > 0) autoRemoved.inc(outcome.removed.length);
            if (outcome.checked.length > 0 || outcome.removed.length > 0) {
              await commands.publish(checkedChannel, JSON.stringify({ userId, proxyIds: outcome.checked, removedIds: outcome.removed })).catch((error: unknown) =>
                logger.warn("checked proxies not published", { userId, error }),
              );
            }
            return { checked: outcome.checked.length, removed: outcome.removed.length, skipped: outcome.skipped };
          },
        },
        {
          connection: workerConnection,
          prefix: config.QUEUE_PREFIX,
          concurrency: workerConcurrency(globalConfig.current().checker.concurrency),
          onError: (error, job) => logger.error("check job failed", { error, job: job?.name }),
        },
      );
      await consumer.worker.waitUntilReady();
      // The scheduler's id is its job name: however many checkers register it, one tick runs at a time.
      await checks.schedule("check-tick", CHECK_TICK_SECONDS, {});
      logger.info("checker started", { maxSockets: config.CHECKER_MAX_SOCKETS, batchSize: config.CHECKER_BATCH_SIZE });
    },
    async stop() {
      clearInterval(refreshTimer);
      clearInterval(judgeTimer);
      for (const off of unsubscribe.splice(0)) off();
      await consumer?.close();
      await checks.close();
      await globalConfig.stop().catch(() => undefined);
      for (const connection of [commands, subscriber, producerConnection, workerConnection]) connection.disconnect();
    },
  };
}
