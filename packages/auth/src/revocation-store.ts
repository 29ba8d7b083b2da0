import type { Redis } from "ioredis";
import type { DbHandle, PrismaClient } from "@roost/db";
import type { VerifiedToken } from "./token-service.js";

/** Redis did not answer and AUTH_REVOCATION_FAIL_OPEN=false: authentication must fail (503). */
export class RevocationUnavailableError extends Error {
  constructor(cause?: unknown) {
    super("revocation store unavailable", { cause });
    this.name = "RevocationUnavailableError";
  }
}

export interface RevocationStore {
  /** True when the token was revoked by jti or by its user's cutoff. */
  isRevoked(token: VerifiedToken): Promise<boolean>;
  /**
   * Revokes one token; PostgreSQL and Redis both, or neither (throws).
   * Resolves false when the token was already revoked (a concurrent logout
   * or refresh of the same token won), so exactly one caller gets true.
   */
  revokeToken(token: Pick<VerifiedToken, "jti" | "user_id" | "exp">): Promise<boolean>;
  /**
   * Revokes every token of the user issued at or before `cutoffMs`, inside the
   * caller's transaction (so a password change and its revocation commit
   * together). A cutoff never moves backwards. Throws when Redis cannot take
   * the write, which rolls the caller's transaction back.
   */
  revokeUserTokens(tx: DbHandle, userId: number, cutoffMs: number): Promise<void>;
  /** The user's cutoff in milliseconds as PostgreSQL knows it, or null; new tokens are issued after it. */
  userCutoffMs(db: DbHandle, userId: number): Promise<number | null>;
  /** Loads every live revocation from PostgreSQL into Redis. */
  reseed(): Promise<void>;
}

export interface RevocationStoreOptions {
  prisma: PrismaClient;
  redis: Redis;
  /** Key prefix, e.g. `roost:`. */
  prefix: string;
  failOpen: boolean;
  /** Longest token lifetime, so revocation keys can expire when no token can be older. */
  maxTokenTtlMinutes: number;
}

/** Revoked jtis copied into Redis per pipeline during a re-seed. */
const RESEED_BATCH = 5000;

/**
 * Sets a cutoff key only if it raises the stored cutoff, so a re-seed that
 * read PostgreSQL before a newer password change cannot lower it again.
 * KEYS[1] cutoff key; ARGV[1] cutoff ms; ARGV[2] expiry as a unix time in ms.
 */
const RAISE_CUTOFF = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) >= current then
  redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2])
  return 1
end
return 0`;

/**
 * Two layers with the same state: Redis answers every request (the fast
 * path), PostgreSQL keeps the truth (per-user cutoffs in `token_cutoffs`,
 * revoked jtis in `revoked_tokens`). A `seeded` marker in Redis tells a
 * restarted or flushed Redis apart from one that simply holds no revocation:
 * while it is missing PostgreSQL answers and Redis is re-seeded.
 */
export function createRevocationStore(options: RevocationStoreOptions): RevocationStore {
  const { prisma, redis, prefix, failOpen } = options;
  const seededKey = `${prefix}auth:revocation-seeded`;
  const jtiKey = (jti: string) => `${prefix}auth:revoked-jti:${jti}`;
  const cutoffKey = (userId: number) => `${prefix}auth:cutoff:${userId}`;
  const maxTokenTtlMs = options.maxTokenTtlMinutes * 60_000;
  // A cutoff matters while a token issued before it can still be unexpired.
  const cutoffExpiresAtMs = (cutoffMs: number) => cutoffMs + maxTokenTtlMs + 60_000;

  async function isRevokedInDb(token: VerifiedToken): Promise<boolean> {
    const [revoked, cutoff] = await Promise.all([
      prisma.revokedToken.findUnique({ where: { jti: token.jti }, select: { jti: true } }),
      prisma.tokenCutoff.findUnique({ where: { userId: token.user_id }, select: { revokedBefore: true } }),
    ]);
    if (revoked) return true;
    return cutoff !== null && token.issuedAtMs <= cutoff.revokedBefore.getTime();
  }

  async function reseedOnce(): Promise<void> {
    const now = Date.now();
    const cutoffs = await prisma.tokenCutoff.findMany({
      where: { revokedBefore: { gt: new Date(now - maxTokenTtlMs) } },
      select: { userId: true, revokedBefore: true },
    });
    const cutoffWrites = redis.multi();
    for (const { userId, revokedBefore } of cutoffs) {
      const ms = revokedBefore.getTime();
      cutoffWrites.eval(RAISE_CUTOFF, 1, cutoffKey(userId), String(ms), String(cutoffExpiresAtMs(ms)));
    }
    await cutoffWrites.exec();
    let after: string | undefined;
    for (;;) {
      const tokens = await prisma.revokedToken.findMany({
        where: { expiresAt: { gt: new Date(now) }, ...(after === undefined ? {} : { jti: { gt: after } }) },
        select: { jti: true, expiresAt: true },
        orderBy: { jti: "asc" },
        take: RESEED_BATCH,
      });
      if (tokens.length === 0) break;
      const jtiWrites = redis.multi();
      for (const token of tokens) jtiWrites.set(jtiKey(token.jti), "1", "PXAT", token.expiresAt.getTime());
      await jtiWrites.exec();
      after = tokens[tokens.length - 1]?.jti;
      if (tokens.length < RESEED_BATCH) break;
    }
    // Only now may Redis answer alone.
    await redis.set(seededKey, String(now));
  }

  let reseeding: Promise<void> | null = null;

  const store: RevocationStore = {
    async isRevoked(token) {
      let answer: (string | null)[];
      try {
        answer = await redis.mget(seededKey, jtiKey(token.jti), cutoffKey(token.user_id));
      } catch (error) {
        if (!failOpen) throw new RevocationUnavailableError(error);
        // Availability first: keep serving, still honouring what PostgreSQL knows.
        return isRevokedInDb(token).catch(() => false);
      }
      const [seeded, jtiHit, cutoff] = answer;
      if (seeded === null || seeded === undefined) {
        // Redis restarted or was flushed: PostgreSQL answers until it is re-seeded.
        void store.reseed().catch(() => undefined);
        try {
          return await isRevokedInDb(token);
        } catch (error) {
          if (!failOpen) throw new RevocationUnavailableError(error);
          return false;
        }
      }
      if (jtiHit !== null && jtiHit !== undefined) return true;
      return cutoff !== null && cutoff !== undefined && token.issuedAtMs <= Number(cutoff);
    },

    async revokeToken(token) {
      const expiresAt = new Date(token.exp * 1000);
      return prisma.$transaction(async (tx) => {
        // ON CONFLICT DO NOTHING: the row lock makes concurrent revocations of
        // one jti queue up, and only the first inserts.
        const inserted = await tx.$queryRaw<{ jti: string }[]>`
          INSERT INTO revoked_tokens (jti, user_id, expires_at) VALUES (${token.jti}, ${token.user_id}, ${expiresAt})
          ON CONFLICT (jti) DO NOTHING RETURNING jti`;
        await redis.set(jtiKey(token.jti), "1", "PXAT", expiresAt.getTime());
        return inserted.length === 1;
      });
    },

    async revokeUserTokens(tx, userId, cutoffMs) {
      const rows = await tx.$queryRaw<{ revoked_before: Date }[]>`
        INSERT INTO token_cutoffs (user_id, revoked_before) VALUES (${userId}, ${new Date(cutoffMs)})
        ON CONFLICT (user_id) DO UPDATE SET revoked_before = GREATEST(token_cutoffs.revoked_before, EXCLUDED.revoked_before)
        RETURNING revoked_before`;
      const effectiveMs = rows[0]?.revoked_before.getTime() ?? cutoffMs;
      await redis.eval(RAISE_CUTOFF, 1, cutoffKey(userId), String(effectiveMs), String(cutoffExpiresAtMs(effectiveMs)));
    },

    async userCutoffMs(db, userId) {
      const row = await db.tokenCutoff.findUnique({ where: { userId }, select: { revokedBefore: true } });
      return row ? row.revokedBefore.getTime() : null;
    },

    async reseed() {
      reseeding ??= reseedOnce().finally(() => {
        reseeding = null;
      });
      return reseeding;
    },
  };
  return store;
}
