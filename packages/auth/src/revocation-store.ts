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
  /**
   * Subscribes to revocation broadcasts, which turns on the in-process answer
   * cache (fail-open mode with a subscriber only). Without it every check
   * asks Redis.
   */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface RevocationStoreOptions {
  prisma: PrismaClient;
  redis: Redis;
  /** Key prefix, e.g. `roost:`. */
  prefix: string;
  failOpen: boolean;
  /** Longest token lifetime, so revocation keys can expire when no token can be older. */
  maxTokenTtlMinutes: number;
  /**
   * A dedicated connection for SUBSCRIBE (it may be shared with other
   * subscribers: messages are told apart by channel). With it, and only in
   * fail-open mode, answers are cached in-process (see `cacheTtlMs`).
   */
  subscriber?: Redis;
  /**
   * How long a "not revoked" answer may be reused without asking Redis, in
   * milliseconds; 0 turns the cache off. Revocations made anywhere are
   * broadcast and applied at once; the TTL only bounds how long a missed
   * broadcast could go unnoticed. Default 5000.
   */
  cacheTtlMs?: number;
}

/** Entries of each answer cache before it is emptied (bounds memory, not correctness). */
const CACHE_MAX_ENTRIES = 100_000;

/** A revocation broadcast: one token, or a user's cutoff. */
type RevocationMessage = { jti: string } | { userId: number; cutoffMs: number };

function parseMessage(text: string): RevocationMessage | null {
  try {
    const value = JSON.parse(text) as Record<string, unknown>;
    if (typeof value.jti === "string") return { jti: value.jti };
    if (typeof value.userId === "number" && typeof value.cutoffMs === "number") return { userId: value.userId, cutoffMs: value.cutoffMs };
  } catch {
    // Not ours or garbled: ignored (the TTL still bounds staleness).
  }
  return null;
}

/**
 * What Redis said about tokens and users, reused for `ttlMs` while the
 * broadcast subscription is live. A broadcast revocation is applied at
 * once; any doubt (subscription lost, cache full) empties it. `epoch` moves
 * on every change, so an answer read from Redis before a revocation arrived
 * is not cached after it.
 */
class AnswerCache {
  private readonly jtis = new Map<string, { revoked: boolean; at: number }>();
  private readonly cutoffs = new Map<number, { cutoffMs: number | null; at: number }>();
  epoch = 0;
  live = false;

  constructor(private readonly ttlMs: number) {}

  /** The cached answer, or undefined when Redis must be asked. */
  lookup(token: VerifiedToken, now: number): boolean | undefined {
    if (!this.live) return undefined;
    const jti = this.jtis.get(token.jti);
    if (jti?.revoked) return true;
    const cutoff = this.cutoffs.get(token.user_id);
    if (!jti || !cutoff || now - jti.at >= this.ttlMs || now - cutoff.at >= this.ttlMs) return undefined;
    return cutoff.cutoffMs !== null && token.issuedAtMs <= cutoff.cutoffMs;
  }

  /** Stores what Redis answered, unless something changed since the question was sent. */
  remember(token: VerifiedToken, jtiRevoked: boolean, cutoffMs: number | null, askedAtEpoch: number, now: number): void {
    if (!this.live || askedAtEpoch !== this.epoch) return;
    if (this.jtis.size >= CACHE_MAX_ENTRIES || this.cutoffs.size >= CACHE_MAX_ENTRIES) this.clear();
    this.jtis.set(token.jti, { revoked: jtiRevoked, at: now });
    this.cutoffs.set(token.user_id, { cutoffMs, at: now });
  }

  apply(message: RevocationMessage, now: number): void {
    this.epoch++;
    if ("jti" in message) {
      // Revoked for good: kept (until the cache is emptied) whatever the TTL.
      this.jtis.set(message.jti, { revoked: true, at: now });
    } else {
      // Cutoffs only rise; the next check reads the current one from Redis.
      this.cutoffs.delete(message.userId);
    }
  }

  clear(): void {
    this.epoch++;
    this.jtis.clear();
    this.cutoffs.clear();
  }
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
 * revoked jtis in `revoked_tokens`). A `seeded` marker in Redis holds the
 * run_id of the server that was re-seeded; while it is missing, names another
 * server, or this process has reconnected since its own re-seed, PostgreSQL
 * answers and Redis is re-seeded.
 */
export function createRevocationStore(options: RevocationStoreOptions): RevocationStore {
  const { prisma, redis, prefix, failOpen, subscriber } = options;
  const channel = `${prefix}auth:revocations`;
  const seededKey = `${prefix}auth:revocation-seeded`;
  const jtiKey = (jti: string) => `${prefix}auth:revoked-jti:${jti}`;
  const cutoffKey = (userId: number) => `${prefix}auth:cutoff:${userId}`;
  const maxTokenTtlMs = options.maxTokenTtlMinutes * 60_000;
  // A cutoff matters while a token issued before it can still be unexpired.
  const cutoffExpiresAtMs = (cutoffMs: number) => cutoffMs + maxTokenTtlMs + 60_000;

  /** The token's state as PostgreSQL knows it. */
  async function lookUpInDb(token: VerifiedToken): Promise<{ jtiRevoked: boolean; cutoffMs: number | null }> {
    const [revoked, cutoff] = await Promise.all([
      prisma.revokedToken.findUnique({ where: { jti: token.jti }, select: { jti: true } }),
      prisma.tokenCutoff.findUnique({ where: { userId: token.user_id }, select: { revokedBefore: true } }),
    ]);
    return { jtiRevoked: revoked !== null, cutoffMs: cutoff ? cutoff.revokedBefore.getTime() : null };
  }

  async function reseedOnce(): Promise<void> {
    const generation = connectionGeneration;
    const runId = await serverRunId();
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
    // Only now may Redis answer alone, and only this server (the marker names it).
    await redis.set(seededKey, runId);
    if (generation === connectionGeneration) trustedRunId = runId;
  }

  let reseeding: Promise<void> | null = null;

  // Strict mode (fail-closed) asks Redis every time: an answer must never outlive Redis's availability.
  const cacheTtlMs = options.cacheTtlMs ?? 5000;
  const cache = subscriber && failOpen && cacheTtlMs > 0 ? new AnswerCache(cacheTtlMs) : null;
  const onMessage = (from: string, text: string): void => {
    if (from !== channel || !cache) return;
    const message = parseMessage(text);
    if (message) cache.apply(message, Date.now());
  };
  // A broadcast sent while the subscription was down is lost: forget everything until it is back.
  const onDown = (): void => {
    if (!cache) return;
    cache.live = false;
    cache.clear();
  };
  let subscribing: Promise<void> | null = null;
  const resubscribe = (): Promise<void> => {
    if (!cache || !subscriber) return Promise.resolve();
    subscribing ??= subscriber
      .subscribe(channel)
      .then(
        () => {
          cache.clear();
          cache.live = true;
        },
        () => onDown(),
      )
      .finally(() => {
        subscribing = null;
      });
    return subscribing;
  };
  const onReady = (): void => {
    void resubscribe();
  };

  /**
   * The run_id of the Redis server whose state this process re-seeded itself,
   * on the current connection; null until then. A marker naming another
   * server (restored snapshot, promoted replica, AOF crash) is not trusted,
   * and every reconnect forgets it: keys may have been lost meanwhile.
   */
  let trustedRunId: string | null = null;
  let connectionGeneration = 0;
  const distrust = (): void => {
    connectionGeneration++;
    trustedRunId = null;
    cache?.clear();
  };

  async function serverRunId(): Promise<string> {
    const runId = /^run_id:(\w+)/m.exec(await redis.info("server"))?.[1];
    if (runId === undefined) throw new Error("Redis INFO server has no run_id");
    return runId;
  }

  /** Applies a revocation here at once and tells every other instance. */
  async function broadcast(message: RevocationMessage): Promise<void> {
    cache?.apply(message, Date.now());
    // Best effort: an instance that misses it learns within its cache TTL.
    await redis.publish(channel, JSON.stringify(message)).catch(() => undefined);
  }

  const store: RevocationStore = {
    async isRevoked(token) {
      const cached = cache?.lookup(token, Date.now());
      if (cached !== undefined) return cached;
      const askedAtEpoch = cache?.epoch ?? 0;
      const answerWith = (state: { jtiRevoked: boolean; cutoffMs: number | null }): boolean => {
        cache?.remember(token, state.jtiRevoked, state.cutoffMs, askedAtEpoch, Date.now());
        return state.jtiRevoked || (state.cutoffMs !== null && token.issuedAtMs <= state.cutoffMs);
      };
      let answer: (string | null)[];
      try {
        answer = await redis.mget(seededKey, jtiKey(token.jti), cutoffKey(token.user_id));
      } catch (error) {
        if (!failOpen) throw new RevocationUnavailableError(error);
        // Availability first: keep serving, still honouring what PostgreSQL knows.
        return lookUpInDb(token).then(answerWith, () => false);
      }
      const [seeded, jtiHit, cutoff] = answer;
      if (seeded === null || seeded === undefined || seeded !== trustedRunId) {
        // Redis restarted, was flushed, is another server, or this process reconnected:
        // PostgreSQL answers until this process has re-seeded it.
        void store.reseed().catch(() => undefined);
        try {
          return answerWith(await lookUpInDb(token));
        } catch (error) {
          if (!failOpen) throw new RevocationUnavailableError(error);
          return false;
        }
      }
      return answerWith({ jtiRevoked: jtiHit !== null && jtiHit !== undefined, cutoffMs: cutoff === null || cutoff === undefined ? null : Number(cutoff) });
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
        await broadcast({ jti: token.jti });
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
      await broadcast({ userId, cutoffMs: effectiveMs });
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

    async start() {
      // Either connection coming back may mean keys were lost meanwhile, with or without the cache.
      redis.on("ready", distrust);
      subscriber?.on("ready", distrust);
      if (!cache || !subscriber) return;
      subscriber.on("message", onMessage);
      subscriber.on("ready", onReady);
      for (const event of ["close", "end", "reconnecting"]) subscriber.on(event, onDown);
      // Queued by ioredis until connected, like the global config's subscription.
      await resubscribe();
    },

    async stop() {
      redis.off("ready", distrust);
      subscriber?.off("ready", distrust);
      if (!cache || !subscriber) return;
      subscriber.off("message", onMessage);
      subscriber.off("ready", onReady);
      for (const event of ["close", "end", "reconnecting"]) subscriber.off(event, onDown);
      onDown();
      await subscribing?.catch(() => undefined);
      await subscriber.unsubscribe(channel).catch(() => undefined);
    },
  };
  return store;
}
