import type { PrismaClient } from "@roost/db";
import type { Logger } from "@roost/observability";
import {
  claimDueMessages,
  createResetToken,
  deleteResetToken,
  markDropped,
  markFailed,
  markRetry,
  markSent,
  outboxKindSchema,
  outboxMessages,
  releaseClaims,
  renewLease,
  storeResetToken,
  type ClaimedMessage,
  type OutboxKind,
} from "@roost/outbox";
import type { MailerConfig, SmtpSettings } from "./config/mailer.config.js";
import type { MailerMetrics } from "./mailer.metrics.js";
import { SendError, type OutgoingMail, type SmtpSender } from "./smtp-sender.js";
import { renderPasswordChanged } from "./templates/password-changed.template.js";
import { renderPasswordReset, resetLink } from "./templates/password-reset.template.js";

export interface DrainerDeps {
  prisma: PrismaClient;
  sender: SmtpSender;
  smtp: SmtpSettings;
  config: MailerConfig;
  logger: Logger;
  metrics: MailerMetrics;
  workerId: string;
  /** True once the service is stopping: no new claims, no new sends. */
  stopping(): boolean;
}

/** What to do with a claimed row: send this mail, finish it unsent, or leave it (lease lost). */
type Prepared =
  | { action: "send"; mail: OutgoingMail; tokenHash: string | null }
  | { action: "drop"; reason: string }
  | { action: "lost" };

/** Back-off before attempt `attempts + 1`: base × 2^(attempts − 1), capped. */
export function retryDelaySeconds(attempts: number, baseSeconds: number, maxSeconds: number): number {
  const exponent = Math.min(Math.max(attempts - 1, 0), 30);
  return Math.min(baseSeconds * 2 ** exponent, maxSeconds);
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error)).slice(0, 1000);

export interface OutboxDrainer {
  /** Claims and handles due rows batch after batch until none is due (or the service stops). */
  drainAll(): Promise<void>;
}

export function createOutboxDrainer(deps: DrainerDeps): OutboxDrainer {
  const { prisma, sender, smtp, config, logger, metrics, workerId } = deps;
  const lease = config.MAILER_LEASE_SECONDS;

  /** Turns a claimed row into a mail; a reset token is minted here, at send time, and only its hash is stored. */
  async function prepare(message: ClaimedMessage, kind: OutboxKind): Promise<Prepared> {
    switch (kind) {
      case "password_reset":
        return prisma.$transaction(async (tx): Promise<Prepared> => {
          if (!(await renewLease(tx, message.id, workerId, lease))) return { action: "lost" };
          if (message.userId === null) return { action: "drop", reason: "no_account" };
          const user = await tx.user.findUnique({ where: { id: message.userId }, select: { id: true, email: true } });
          if (!user) return { action: "drop", reason: "account_gone" };
          if (user.email !== message.recipient) return { action: "drop", reason: "address_changed" };
          const { token, tokenHash } = createResetToken();
          await storeResetToken(tx, { userId: user.id, tokenHash, ttlMinutes: config.PASSWORD_RESET_TOKEN_TTL_MINUTES });
          const rendered = renderPasswordReset({
            link: resetLink(smtp.publicAppUrl, token),
            ttlMinutes: config.PASSWORD_RESET_TOKEN_TTL_MINUTES,
          });
          return { action: "send", mail: { ...rendered, to: user.email, outboxId: message.id }, tokenHash };
        });
      case "password_changed": {
        if (!(await renewLease(prisma, message.id, workerId, lease))) return { action: "lost" };
        const rendered = renderPasswordChanged({ changedAt: message.createdAt, publicAppUrl: smtp.publicAppUrl });
        return { action: "send", mail: { ...rendered, to: message.recipient, outboxId: message.id }, tokenHash: null };
      }
    }
  }

  async function fail(message: ClaimedMessage, kind: string, error: string): Promise<void> {
    await markFailed(prisma, message.id, workerId, error);
    metrics.failed.inc({ kind });
    logger.error("e-mail given up", { outboxId: String(message.id), kind, attempts: message.attempts, error });
  }

  async function handle(message: ClaimedMessage): Promise<void> {
    const outboxId = String(message.id);
    const kindResult = outboxKindSchema.safeParse(message.kind);
    if (!kindResult.success) return fail(message, "unknown", `unknown kind ${message.kind}`);
    const kind = kindResult.data;
    if (!outboxMessages[kind].safeParse(message.payload).success) return fail(message, kind, "invalid payload");
    // Attempts are counted at the claim, so a message that keeps crashing its
    // mailer (or keeps outliving its lease) also runs out of attempts.
    if (message.attempts > config.MAILER_MAX_ATTEMPTS) return fail(message, kind, "out of attempts");

    const prepared = await prepare(message, kind);
    if (prepared.action === "lost") {
      logger.warn("outbox lease lost before sending", { outboxId, kind });
      return;
    }
    if (prepared.action === "drop") {
      await markDropped(prisma, message.id, workerId, prepared.reason);
      metrics.dropped.inc({ kind, reason: prepared.reason });
      logger.info("e-mail dropped", { outboxId, kind, reason: prepared.reason });
      return;
    }

    try {
      await sender.send(prepared.mail);
    } catch (caught) {
      const error = caught instanceof SendError ? caught : new SendError(errorText(caught), false, undefined);
      metrics.sendErrors.inc({ kind, permanent: String(error.permanent) });
      // The mail did not go out, so its token must not stay usable.
      if (prepared.tokenHash) await deleteResetToken(prisma, prepared.tokenHash).catch(() => undefined);
      if (error.permanent || message.attempts >= config.MAILER_MAX_ATTEMPTS) {
        return fail(message, kind, errorText(error));
      }
      const delaySeconds = retryDelaySeconds(message.attempts, config.MAILER_RETRY_BASE_SECONDS, config.MAILER_RETRY_MAX_SECONDS);
      await markRetry(prisma, message.id, workerId, delaySeconds, errorText(error));
      logger.warn("e-mail send failed, will retry", { outboxId, kind, attempts: message.attempts, delaySeconds, code: error.code, error: error.message });
      return;
    }

    metrics.sent.inc({ kind });
    // Between the server's acceptance and this update lies the only window in
    // which a crash leads to a second copy (the row's lease then runs out and
    // it is sent again); once this update commits the row is never sent again.
    if (await markSent(prisma, message.id, workerId)) {
      logger.info("e-mail sent", { outboxId, kind, attempts: message.attempts });
    } else {
      logger.warn("e-mail sent after its lease was lost; another mailer may send it again", { outboxId, kind });
    }
  }

  /** Runs `handle` over the batch with MAILER_CONCURRENCY lanes; rows not started when stopping are released. */
  async function runBatch(batch: ClaimedMessage[]): Promise<void> {
    let next = 0;
    const lane = async () => {
      while (!deps.stopping()) {
        const message = batch[next++];
        if (!message) return;
        try {
          await handle(message);
        } catch (error) {
          // A database error mid-message: the row stays claimed and is retried when its lease runs out.
          logger.error("outbox message handling failed", { outboxId: String(message.id), error });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(config.MAILER_CONCURRENCY, batch.length) }, lane));
    const untouched = batch.slice(next).map((m) => m.id);
    if (untouched.length > 0) await releaseClaims(prisma, untouched, workerId);
  }

  return {
    async drainAll() {
      while (!deps.stopping()) {
        const batch = await claimDueMessages(prisma, { workerId, limit: config.MAILER_BATCH_SIZE, leaseSeconds: lease });
        if (batch.length === 0) return;
        await runBatch(batch);
      }
    },
  };
}
