import { createHash, randomBytes } from "node:crypto";
import type { DbHandle } from "@roost/db";

/**
 * Password-reset tokens. The raw token exists only in memory in the mailer
 * that mints it and in the link it sends; PostgreSQL keeps its SHA-256. A
 * token has 256 random bits, so a fast unsalted hash is enough: there is
 * nothing to guess offline that is cheaper than guessing the token itself.
 */

/** A fresh token (43 URL-safe characters) and the hash to store. */
export function createResetToken(): { token: string; tokenHash: string } {
  const token = randomBytes(32).toString("base64url");
  return { token, tokenHash: hashResetToken(token) };
}

/** Lowercase hex SHA-256 of the token as sent in the link. */
export function hashResetToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** Stores a token's hash, valid for `ttlMinutes` from now (PostgreSQL's clock). */
export async function storeResetToken(
  db: DbHandle,
  input: { userId: number; tokenHash: string; ttlMinutes: number },
): Promise<void> {
  await db.$executeRaw`
    INSERT INTO password_reset_tokens (user_id, token_hash, expires_at)
    VALUES (${input.userId}, ${input.tokenHash}, now() + make_interval(mins => ${input.ttlMinutes}))`;
}

/** Removes one token by hash (a send that failed leaves no usable token behind). */
export async function deleteResetToken(db: DbHandle, tokenHash: string): Promise<void> {
  await db.$executeRaw`DELETE FROM password_reset_tokens WHERE token_hash = ${tokenHash}`;
}
