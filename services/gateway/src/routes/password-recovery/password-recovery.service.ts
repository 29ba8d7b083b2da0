import { passwordPolicyError } from "@roost/auth";
import { limitTransactionWaits } from "@roost/db";
import { enqueueEmail, hashResetToken, insertPasswordResetIntent } from "@roost/outbox";
import type { GatewayDeps } from "../../gateway.deps.js";
import { badRequest, HttpError, unauthorized, unavailable } from "../../http/http-error.js";
import {
  consumeResetToken,
  deleteUserResetTokens,
  findUsableResetToken,
  setPasswordHash,
} from "./password-recovery.repository.js";

/** The one answer to every accepted forgotPassword request, whether or not the account exists. */
export const FORGOT_PASSWORD_MESSAGE = "If an account uses that e-mail address, a password reset link has been sent to it.";
export const RESET_PASSWORD_MESSAGE = "Password has been reset.";
export const INVALID_RESET_TOKEN = "Invalid or expired reset token";
export const RECOVERY_NOT_CONFIGURED = "Password recovery is not configured on this server";
export const RECOVERY_UNAVAILABLE = "Password recovery is temporarily unavailable, try again later";

export interface PasswordRecoveryService {
  /**
   * Queues a reset e-mail for a normalised, valid address. The same code
   * runs for every address: one outbox INSERT whose users lookup is a LEFT
   * JOIN inside the statement, then a wake-up for the mailer. Nothing here
   * learns whether the account exists, and nothing here talks SMTP: the
   * response is sent once the row is committed.
   */
  requestReset(email: string): Promise<void>;
  /** The account of a usable token (for the per-account rate limit), or null. */
  accountForToken(token: string): Promise<{ userId: number; email: string } | null>;
  /** Sets the new password, removes every reset token of the user, revokes their sessions, queues a confirmation. */
  resetPassword(token: string, newPassword: string): Promise<void>;
}

export function createPasswordRecoveryService(deps: GatewayDeps): PasswordRecoveryService {
  const { prisma } = deps.db;
  const { config, hasher, revocation } = deps;
  const logger = deps.logger.child({ component: "password-recovery" });
  const configured = config.SMTP_HOST !== undefined && config.MAIL_FROM_ADDRESS !== undefined && config.PUBLIC_APP_URL !== undefined;
  const waitMs = config.OUTBOX_WRITE_TIMEOUT_MS;

  /** A lost wake-up only delays the mail until the mailer's next poll, so it never fails the request. */
  function wakeMailer(outboxId: bigint): void {
    void deps.queues.mail
      .enqueue("wake", { outboxId: String(outboxId) })
      .catch((error: unknown) => {
        deps.metrics.queueHandoffFailuresTotal.inc({ queue: "mail" });
        logger.warn("mailer wake-up not queued; the mailer's poll will pick the row up", { error });
      });
  }

  return {
    async requestReset(email) {
      if (!configured) throw unavailable(RECOVERY_NOT_CONFIGURED);
      let outboxId: bigint;
      try {
        outboxId = await prisma.$transaction(
          async (tx) => {
            await limitTransactionWaits(tx, waitMs);
            return insertPasswordResetIntent(tx, email);
          },
          { maxWait: waitMs, timeout: waitMs + 5_000 },
        );
      } catch (error) {
        logger.error("password reset request could not be stored in the outbox", { error });
        throw unavailable(RECOVERY_UNAVAILABLE, 2);
      }
      wakeMailer(outboxId);
    },

    accountForToken(token) {
      return findUsableResetToken(prisma, hashResetToken(token));
    },

    async resetPassword(token, newPassword) {
      const policyError = passwordPolicyError(newPassword);
      if (policyError) throw badRequest(policyError);
      const passwordHash = await hasher.hash(newPassword);
      const tokenHash = hashResetToken(token);
      let done: { userId: number; outboxId: bigint };
      try {
        done = await prisma.$transaction(
          async (tx) => {
            await limitTransactionWaits(tx, waitMs);
            const userId = await consumeResetToken(tx, tokenHash);
            if (userId === null) throw unauthorized(INVALID_RESET_TOKEN);
            const email = await setPasswordHash(tx, userId, passwordHash);
            if (email === null) throw unauthorized(INVALID_RESET_TOKEN);
            await deleteUserResetTokens(tx, userId);
            // Same transaction as the password update: both commit or neither.
            await revocation.revokeUserTokens(tx, userId, Date.now());
            const outboxId = await enqueueEmail(tx, { kind: "password_changed", recipient: email, userId });
            return { userId, outboxId };
          },
          { maxWait: waitMs, timeout: waitMs + 10_000 },
        );
      } catch (error) {
        if (error instanceof HttpError) {
          if (error.status === 401) deps.metrics.authFailuresTotal.inc({ reason: "bad_reset_token" });
          throw error;
        }
        logger.error("password reset failed, nothing was changed", { error });
        throw unavailable("Password reset is temporarily unavailable, nothing was changed; try again", 2);
      }
      logger.info("password reset", { userId: done.userId });
      wakeMailer(done.outboxId);
    },
  };
}
