import type { DbHandle } from "@roost/db";

/** The account behind a reset token that can still be used (unused, unexpired), or null. */
export async function findUsableResetToken(db: DbHandle, tokenHash: string): Promise<{ userId: number; email: string } | null> {
  const rows = await db.$queryRaw<{ userId: number; email: string }[]>`
    SELECT t.user_id AS "userId", u.email
    FROM password_reset_tokens t JOIN users u ON u.id = t.user_id
    WHERE t.token_hash = ${tokenHash} AND t.used_at IS NULL AND t.expires_at > now()`;
  return rows[0] ?? null;
}

/**
 * Consumes a token: deletes it if it is still usable and returns its user.
 * Two requests racing with one token serialise on the row; the second finds
 * it gone and gets null.
 */
export async function consumeResetToken(tx: DbHandle, tokenHash: string): Promise<number | null> {
  const rows = await tx.$queryRaw<{ userId: number }[]>`
    DELETE FROM password_reset_tokens
    WHERE token_hash = ${tokenHash} AND used_at IS NULL AND expires_at > now()
    RETURNING user_id AS "userId"`;
  return rows[0]?.userId ?? null;
}

/** Removes every outstanding reset token of the user (contract: a successful reset removes them all). */
export async function deleteUserResetTokens(tx: DbHandle, userId: number): Promise<number> {
  return tx.$executeRaw`DELETE FROM password_reset_tokens WHERE user_id = ${userId}`;
}

/** Sets the password hash; returns the account's e-mail, or null when the account is gone. */
export async function setPasswordHash(tx: DbHandle, userId: number, passwordHash: string): Promise<string | null> {
  const rows = await tx.$queryRaw<{ email: string }[]>`
    UPDATE users SET password_hash = ${passwordHash}, updated_at = now() WHERE id = ${userId} RETURNING email`;
  return rows[0]?.email ?? null;
}
