import { Router, type Request, type RequestHandler } from "express";
import type { z } from "zod";
import { isValidEmail, normalizeEmail } from "@roost/auth";
import type { GatewayDeps } from "../../gateway.deps.js";
import { badRequest, unauthorized } from "../../http/http-error.js";
import { byIp, createRateLimiter, emailKey, type RateLimitDeps } from "../../http/rate-limit.js";
import { zodMessage } from "../../http/validation.js";
import { forgotPasswordSchema, resetPasswordSchema } from "./password-recovery.schema.js";
import {
  createPasswordRecoveryService,
  FORGOT_PASSWORD_MESSAGE,
  INVALID_RESET_TOKEN,
  RESET_PASSWORD_MESSAGE,
} from "./password-recovery.service.js";

const MINUTE = 60_000;

function parse<S extends z.ZodType>(schema: S, req: Request): z.output<S> {
  const result = schema.safeParse(req.body);
  if (!result.success) throw badRequest(zodMessage(result.error));
  return result.data;
}

/** POST /api/forgotPassword and POST /api/resetPassword (public). */
export function passwordRecoveryRouter(deps: GatewayDeps): Router {
  const router = Router();
  const service = createPasswordRecoveryService(deps);
  const limits: RateLimitDeps = { redis: deps.redis, prefix: `${deps.config.QUEUE_PREFIX}:`, metrics: deps.metrics, logger: deps.logger };
  const c = deps.config;

  // Both limits answer 429 before anything looks at accounts, so a blocked
  // request says nothing about whether the address has one.
  const forgotLimits: RequestHandler[] = [
    createRateLimiter(limits, { scope: "forgot_password_ip", limit: c.RATE_LIMIT_FORGOT_PASSWORD_PER_MINUTE, windowMs: MINUTE, key: byIp }),
    createRateLimiter(limits, {
      scope: "forgot_password_email",
      limit: 1,
      windowMs: c.RATE_LIMIT_FORGOT_PASSWORD_EMAIL_WINDOW_SECONDS * 1000,
      key: emailKey,
    }),
  ];

  router.post("/forgotPassword", ...forgotLimits, async (req, res) => {
    const email = normalizeEmail(parse(forgotPasswordSchema, req).email);
    if (!isValidEmail(email)) throw badRequest("Invalid email address");
    await service.requestReset(email);
    res.json({ message: FORGOT_PASSWORD_MESSAGE });
  });

  // The per-account limit needs the token's account, so a middleware
  // resolves it first (401 for a token that cannot be used) and the limiter
  // keys on what it found.
  const resolvedAccount = new WeakMap<Request, { userId: number }>();
  const resolveToken: RequestHandler = async (req, _res, next) => {
    const { token } = parse(resetPasswordSchema, req);
    const account = await service.accountForToken(token);
    if (!account) {
      deps.metrics.authFailuresTotal.inc({ reason: "bad_reset_token" });
      throw unauthorized(INVALID_RESET_TOKEN);
    }
    resolvedAccount.set(req, { userId: account.userId });
    next();
  };
  const resetIpLimit = createRateLimiter(limits, {
    scope: "reset_password_ip",
    limit: c.RATE_LIMIT_RESET_PASSWORD_PER_MINUTE,
    windowMs: MINUTE,
    key: byIp,
  });
  const resetAccountLimit = createRateLimiter(limits, {
    scope: "reset_password_account",
    limit: c.RATE_LIMIT_RESET_PASSWORD_PER_ACCOUNT_PER_MINUTE,
    windowMs: MINUTE,
    key: (req) => {
      const account = resolvedAccount.get(req);
      return account ? `user:${account.userId}` : null;
    },
  });

  router.post("/resetPassword", resetIpLimit, resolveToken, resetAccountLimit, async (req, res) => {
    const { token, newPassword } = parse(resetPasswordSchema, req);
    await service.resetPassword(token, newPassword);
    res.json({ message: RESET_PASSWORD_MESSAGE });
  });

  return router;
}
