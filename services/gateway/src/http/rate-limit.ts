import { createHash } from "node:crypto";
import type { Request, RequestHandler, Response } from "express";
import { ipKeyGenerator, rateLimit } from "express-rate-limit";
import { RedisStore, type RedisReply } from "rate-limit-redis";
import type { Redis } from "ioredis";
import { isValidEmail, normalizeEmail } from "@roost/auth";
import { FallbackStore } from "./fallback-store.js";
import type { Logger, Metrics } from "@roost/observability";

export interface RateLimitSpec {
  /** Label in svc_rate_limit_blocks_total{scope} and part of the Redis key. */
  scope: string;
  limit: number;
  windowMs: number;
  /** What is counted; null skips the limiter for this request (e.g. no e-mail in the body). */
  key: (req: Request) => string | null;
  /**
   * Count only requests that fail: `true` for any status >= 400 (failed
   * logins), or a list of the statuses that count (a wrong password's 401,
   * not a busy account's 409; list 429 too, or the requests this limit
   * refuses are given back). Each is counted when it arrives and given
   * back when it ends otherwise, so concurrent requests cannot get past.
   */
  failuresOnly?: boolean | readonly number[];
}

export interface RateLimitDeps {
  redis: Redis;
  prefix: string;
  metrics: Metrics;
  logger: Logger;
}

/** Client IP as a rate-limit key; IPv6 grouped by /56 so one host cannot rotate addresses. */
export const byIp = (req: Request): string => ipKeyGenerator(req.ip ?? "unknown");

/** Longest e-mail any route accepts (the account schemas' cap). */
const MAX_EMAIL_LENGTH = 320;

/**
 * The body's e-mail as a rate-limit key: a fixed-size hash of the normalised
 * address, so neither an address nor an attacker's megabyte string becomes a
 * Redis key; null (limiter skipped) when the value is not a valid e-mail.
 */
export function emailKey(req: Request): string | null {
  const email = (req.body as { email?: unknown } | undefined)?.email;
  if (typeof email !== "string" || email.length > MAX_EMAIL_LENGTH) return null;
  const normalised = normalizeEmail(email);
  if (!isValidEmail(normalised)) return null;
  return createHash("sha256").update(normalised).digest("hex").slice(0, 32);
}

/**
 * A limiter whose counters live in Redis, shared by every gateway instance.
 * Blocks answer 429 `{error}` with Retry-After before any credential check.
 * While Redis is unavailable the counting goes on in this process (logged).
 */
export function createRateLimiter(deps: RateLimitDeps, spec: RateLimitSpec): RequestHandler {
  const redisStore = new RedisStore({
    prefix: `${deps.prefix}rl:${spec.scope}:`,
    sendCommand: (command: string, ...args: string[]) => deps.redis.call(command, ...args) as Promise<RedisReply>,
  });
  // The store loads its scripts when constructed and awaits them only on first
  // use: if Redis is away at that moment, the rejection would go unhandled and
  // end the process. It reloads them itself on the next request.
  for (const scriptSha of [redisStore.incrementScriptSha, redisStore.getScriptSha]) scriptSha.catch(() => undefined);
  // While Redis is unavailable the limit holds in this process (the block counts in svc_rate_limit_blocks_total as always).
  const store = new FallbackStore(redisStore, (error) =>
    deps.logger.warn("rate limit store unavailable, counting in this process", { scope: spec.scope, error }),
  );
  const statuses = spec.failuresOnly;
  const failing: ((status: number) => boolean) | null =
    statuses === undefined || statuses === false ? null : statuses === true ? (status) => status >= 400 : (status) => statuses.includes(status);
  return rateLimit({
    windowMs: spec.windowMs,
    limit: spec.limit,
    standardHeaders: "draft-7",
    legacyHeaders: false,
    skipFailedRequests: false,
    skipSuccessfulRequests: failing !== null,
    ...(failing && { requestWasSuccessful: (_req: Request, res: Response) => !failing(res.statusCode) }),
    skip: (req) => spec.key(req) === null,
    keyGenerator: (req) => spec.key(req) ?? "",
    // Only if the in-process counters fail too.
    passOnStoreError: true,
    logger: {
      error: (error: unknown) => deps.logger.warn("rate limit store unavailable, request allowed", { scope: spec.scope, error }),
      warn: (warning: unknown) => deps.logger.warn("rate limiter warning", { scope: spec.scope, warning }),
    },
    validate: false,
    store,
    handler: (req, res) => {
      deps.metrics.rateLimitBlocksTotal.inc({ scope: spec.scope });
      const resetTime = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const retryAfterSec = resetTime ? Math.max(1, Math.ceil((resetTime.getTime() - Date.now()) / 1000)) : Math.ceil(spec.windowMs / 1000);
      res.setHeader("Retry-After", String(retryAfterSec));
      res.status(429).json({ error: "Too many requests, try again later" });
    },
  });
}
