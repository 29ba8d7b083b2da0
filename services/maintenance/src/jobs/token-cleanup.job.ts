import type pg from "pg";

/** Reset tokens that expired or were used can never be redeemed again. */
export async function cleanupResetTokens(pool: pg.Pool): Promise<{ deleted: number }> {
  const result = await pool.query("DELETE FROM password_reset_tokens WHERE expires_at < now() OR used_at IS NOT NULL");
  return { deleted: result.rowCount ?? 0 };
}

/** A revoked jti only matters until the token's own expiry. */
export async function cleanupRevokedTokens(pool: pg.Pool): Promise<{ deleted: number }> {
  const result = await pool.query("DELETE FROM revoked_tokens WHERE expires_at < now()");
  return { deleted: result.rowCount ?? 0 };
}
