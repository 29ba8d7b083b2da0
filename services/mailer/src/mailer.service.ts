import { randomUUID } from "node:crypto";
import os from "node:os";
import type { Database } from "@roost/db";
import type { Logger, Metrics } from "@roost/observability";
import { deleteFinishedMessages, outboxStats } from "@roost/outbox";
import { createConsumer, createRedisConnection, mailQueue, type Consumer } from "@roost/queue";
import type { MailerConfig } from "./config/mailer.config.js";
import { mailerMetrics } from "./mailer.metrics.js";
import { createOutboxDrainer, type OutboxDrainer } from "./outbox-drainer.js";
import { createSmtpSender, type SmtpSender } from "./smtp-sender.js";

/** Everything the mailer needs; main.ts or all-in-one builds it. */
export interface MailerDeps {
  config: MailerConfig;
  db: Database;
  /** Redis for the `mail` wake-up queue (the outbox table stays the source of truth). */
  redisUrl: string;
  logger: Logger;
  metrics: Metrics;
  /** Written to email_outbox.locked_by; default `<hostname>:<pid>:<random>`. */
  workerId?: string;
}

export interface MailerService {
  readonly workerId: string;
  /** Begins polling and consuming wake-ups; a no-op (with a warning) when recovery e-mail is not configured. */
  start(): Promise<void>;
  /** Drains the outbox now; resolves when no row is due (used by tests and by wake-ups). */
  drain(): Promise<void>;
  /** Stops claiming, lets messages being sent finish, hands unstarted claims back. Idempotent. */
  stop(): Promise<void>;
}

/** How often finished rows older than MAILER_RETENTION_DAYS are deleted. */
const CLEANUP_INTERVAL_MS = 60 * 60 * 1000;

export function createMailerService(deps: MailerDeps): MailerService {
  const { config, db } = deps;
  const logger = deps.logger.child({ service: "mailer" });
  const metrics = mailerMetrics(deps.metrics);
  const workerId = deps.workerId ?? `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

  let stopping = false;
  let started = false;
  let sender: SmtpSender | null = null;
  let drainer: OutboxDrainer | null = null;
  let consumer: Consumer | null = null;
  let workerConnection: ReturnType<typeof createRedisConnection> | null = null;
  let pollTimer: NodeJS.Timeout | null = null;
  let cleanupTimer: NodeJS.Timeout | null = null;
  let draining: Promise<void> | null = null;
  let again = false;

  async function refreshGauges(): Promise<void> {
    const stats = await outboxStats(db.prisma);
    metrics.pending.set(stats.pending);
    metrics.oldestPendingAgeSeconds.set(stats.oldestPendingAgeSeconds);
  }

  /** Single-flight: a wake-up during a drain makes that drain go round once more instead of starting a second one. */
  function drain(): Promise<void> {
    if (!drainer || stopping) return draining ?? Promise.resolve();
    if (draining) {
      again = true;
      return draining;
    }
    const active = drainer;
    draining = (async () => {
      do {
        again = false;
        try {
          await active.drainAll();
        } catch (error) {
          logger.error("outbox drain failed", { error });
        }
      } while (again && !stopping);
      await refreshGauges().catch((error: unknown) => logger.warn("outbox stats unavailable", { error }));
    })().finally(() => {
      draining = null;
    });
    return draining;
  }

  async function cleanup(): Promise<void> {
    try {
      const deleted = await deleteFinishedMessages(db.prisma, config.MAILER_RETENTION_DAYS);
      if (deleted > 0) logger.info("finished outbox rows deleted", { deleted, retentionDays: config.MAILER_RETENTION_DAYS });
    } catch (error) {
      logger.warn("outbox cleanup failed", { error });
    }
  }

  return {
    workerId,

    async start() {
      if (started) return;
      started = true;
      if (!config.smtp) {
        logger.warn("password recovery e-mail is not configured (SMTP_HOST, MAIL_FROM_ADDRESS, PUBLIC_APP_URL); mailer idle");
        return;
      }
      sender = createSmtpSender(config.smtp);
      drainer = createOutboxDrainer({
        prisma: db.prisma,
        sender,
        smtp: config.smtp,
        config,
        logger,
        metrics,
        workerId,
        stopping: () => stopping,
      });
      workerConnection = createRedisConnection(deps.redisUrl, "worker");
      consumer = createConsumer(
        mailQueue,
        {
          // The job only kicks a drain; it does not wait for it, so a long
          // drain never holds a BullMQ job lock.
          wake: async () => {
            void drain();
          },
        },
        {
          connection: workerConnection,
          prefix: config.QUEUE_PREFIX,
          concurrency: 1,
          onError: (error) => logger.warn("mail wake-up consumer error", { error }),
        },
      );
      pollTimer = setInterval(() => void drain(), config.MAILER_POLL_INTERVAL_SECONDS * 1000);
      cleanupTimer = setInterval(() => void cleanup(), CLEANUP_INTERVAL_MS);
      logger.info("mailer started", {
        workerId,
        smtpHost: config.smtp.host,
        smtpPort: config.smtp.port,
        pollIntervalSeconds: config.MAILER_POLL_INTERVAL_SECONDS,
      });
      void cleanup();
      void drain();
    },

    drain,

    async stop() {
      if (stopping) return;
      stopping = true;
      if (pollTimer) clearInterval(pollTimer);
      if (cleanupTimer) clearInterval(cleanupTimer);
      await consumer?.close();
      await draining?.catch(() => undefined);
      sender?.close();
      workerConnection?.disconnect();
      if (started) logger.info("mailer stopped", { workerId });
    },
  };
}
