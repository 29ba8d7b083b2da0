import { z } from "zod";

/**
 * The kinds of e-mail the outbox carries and the payload each row holds.
 * Payloads hold no secrets: a password-reset row is an intent, and the mailer
 * mints the token when it sends (see docs/password-recovery.md). Payloads
 * only grow by optional fields, as queue payloads do.
 */
export const outboxMessages = {
  /** "Send this user a reset link." user_id is null when no account has the requested address: dropped unsent. */
  password_reset: z.object({}).passthrough(),
  /** Confirmation after a successful reset, to the address the account had then. */
  password_changed: z.object({}).passthrough(),
} as const;

export type OutboxKind = keyof typeof outboxMessages;

export const outboxKindSchema = z.enum(["password_reset", "password_changed"]);
// Compile-time check that the enum and the payload map name the same kinds.
const _sameKinds: Record<z.output<typeof outboxKindSchema>, unknown> & Record<OutboxKind, unknown> = outboxMessages;
void _sameKinds;

/**
 * Row lifecycle: pending → processing (claimed under a lease) → sent | dropped
 * | failed, or back to pending with a later next_attempt_at after an error.
 * A processing row whose lease ran out (its mailer died) is claimable again.
 */
export type OutboxStatus = "pending" | "processing" | "sent" | "dropped" | "failed";
