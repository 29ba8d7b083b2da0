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
  /** Revokes one token; PostgreSQL and Redis both, or neither (throws). */
  revokeToken(token: Pick<VerifiedToken, "jti" | "user_id" | "exp">): Promise<void>;
  /**
   * Revokes every token of the user issued at or before `cutoffMs`, inside the
   * caller's transaction (so a password change and its revocation commit
   * together). Throws when Redis cannot take the write, which rolls the
   * caller's transaction back.
   */
  revokeUserTokens(tx: DbHandle, userId: number, cutoffMs: number): Promise<void>;
  /** Loads every live revocation from PostgreSQL into Redis. */
  reseed(): Promise<void>;
}

export interface RevocationStoreOptions {
  prisma: PrismaClient;
  redis: Redis;
  /** Key prefix, e.g. `roost:`. */
  prefix: string;
  failOpen: boolean;
  /** Longest token lifetime, so cutoff keys can expire when no token can be older. */
  maxTokenTtlMinutes: number;
}

export function createRevocationStore(options: RevocationStoreOptions): RevocationStore {
  const { prisma, redis, prefix, failOpen } = options;
  const seededKey = `${prefix}auth:revocation-seeded`;
  const jtiKey = (jti: string) => `${prefix}auth:revoked-jti:${jti}`;
  const cutoffKey = (userId: number) => `${prefix}auth:cutoff:${userId}`;
  const cutoffTtlSec = options.maxTokenTtlMinutes * 60 + 60;

  async function isRevokedInDb(token: VerifiedToken): Promise<boolean> {
    const [revoked, user] = await Promise.all([
      prisma.revokedToken.findUnique({ where: { jti: token.jti }, select: { jti: true } }),
      prisma.user.findUnique({ where: { id: token.user_id }, select: { tokensRevokedBefore: true } }),
    ]);
    if (revoked) return true;
    const cutoff = user?.tokensRevokedBefore?.getTime();
    return cutoff !== undefined && token.issuedAtMs <= cutoff;
  }

  let reseeding: Promise<void> | null = null;
  async function reseedOnce(): Promise<void> {
    const windowStart = new Date(Date.now() - options.maxTokenTtlMinutes * 60_000);
    const [users, tokens] = await Promise.all([
      prisma.user.findMany({
        where: { tokensRevokedBefore: { gt: windowStart } },
        select: { id: true, tokensRevokedBefore: true },
      }),
      prisma.revokedToken.findMany({ where: { expiresAt: { gt: new Date() } }, select: { jti: true, expiresAt: true } }),
    ]);
    const pipeline = redis.multi();
    for (const user of users) {
      if (user.tokensRevokedBefore) pipeline.set(cutoffKey(user.id), String(user.tokensRevokedBefore.getTime()), "EX", cutoffTtlSec);
    }
    for (const token of tokens) pipeline.set(jtiKey(token.jti), "1", "PXAT", token.expiresAt.getTime());
    pipeline.set(seededKey, String(Date.now()));
    await pipeline.exec();
  }

  const store: RevocationStore = {
    async isRevoked(token) {
      let answer: [string | null, string | null, string | null];
      try {
        answer = (await redis.mget(seededKey, jtiKey(token.jti), cutoffKey(token.user_id))) as typeof answer;
      } catch (error) {
        if (!failOpen) throw new RevocationUnavailableError(error);
        // Availability first: keep serving, still honouring what PostgreSQL knows.
        return isRevokedInDb(token).catch(() => false);
      }
      const [seeded, jtiHit, cutoff] = answer;
      if (seeded === null) {
        // Redis restarted or was flushed: PostgreSQL answers until it is re-seeded.
        void store.reseed().catch(() => undefined);
        return isRevokedInDb(token);
      }
      if (jtiHit !== null) return true;
      return cutoff !== null && token.issuedAtMs <= Number(cutoff);
    },

    async revokeToken(token) {
      const expiresAt = new Date(token.exp * 1000);
      await prisma.$transaction(async (tx) => {
        await tx.revokedToken.upsert({
          where: { jti: token.jti },
          create: { jti: token.jti, userId: token.user_id, expiresAt },
          update: {},
        });
        await redis.set(jtiKey(token.jti), "1", "PXAT", expiresAt.getTime());
      });
    },

    async revokeUserTokens(tx, userId, cutoffMs) {
      await tx.user.update({ where: { id: userId }, data: { tokensRevokedBefore: new Date(cutoffMs) } });
      await redis.set(cutoffKey(userId), String(cutoffMs), "EX", cutoffTtlSec);
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
