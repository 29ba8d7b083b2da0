import { Router, type Request, type RequestHandler } from "express";
import type { GatewayDeps } from "../../gateway.deps.js";
import { authOf } from "../../http/auth.middleware.js";
import type { Guards } from "../../http/guards.js";
import { badRequest } from "../../http/http-error.js";
import { byIp, createRateLimiter, emailKey, type RateLimitDeps } from "../../http/rate-limit.js";
import { zodMessage } from "../../http/validation.js";
import { changePasswordSchema, credentialsSchema, deleteAccountSchema } from "./account.schema.js";
import { createAccountService } from "./account.service.js";

const MINUTE = 60_000;

function parse<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: import("zod").ZodError } }, req: Request): T {
  const result = schema.safeParse(req.body);
  if (!result.success) throw badRequest(zodMessage(result.error));
  return result.data;
}

/**
 * Account routes: register and login are public, the rest need a token. One
 * service instance serves both (it prepares a dummy password hash once).
 */
export function accountRouter(deps: GatewayDeps, { auth }: Guards): Router {
  const router = Router();
  const service = createAccountService(deps);
  const limits: RateLimitDeps = { redis: deps.redis, prefix: `${deps.config.QUEUE_PREFIX}:`, metrics: deps.metrics, logger: deps.logger };
  const c = deps.config;

  const registerLimit = createRateLimiter(limits, { scope: "register_ip", limit: c.RATE_LIMIT_REGISTER_PER_MINUTE, windowMs: MINUTE, key: byIp });
  const loginLimits: RequestHandler[] = [
    createRateLimiter(limits, { scope: "login_ip", limit: c.RATE_LIMIT_LOGIN_PER_MINUTE, windowMs: MINUTE, key: byIp }),
    createRateLimiter(limits, {
      scope: "login_failures_email",
      limit: c.RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL,
      windowMs: 15 * MINUTE,
      key: emailKey,
      failuresOnly: true,
    }),
    createRateLimiter(limits, {
      scope: "login_failures_ip",
      limit: c.RATE_LIMIT_LOGIN_FAILURES_PER_IP,
      windowMs: 15 * MINUTE,
      key: byIp,
      failuresOnly: true,
    }),
  ];

  // Keyed by the token's account, so they run after `auth` and before any
  // credential check. One limiter instance serves changePassword and
  // deleteAccount, so alternating the routes gains nothing.
  const byAccount = (req: Request): string => `user:${authOf(req).userId}`;
  const refreshLimit = createRateLimiter(limits, {
    scope: "refresh_token_account",
    limit: c.RATE_LIMIT_REFRESH_TOKEN_PER_ACCOUNT_PER_MINUTE,
    windowMs: MINUTE,
    key: byAccount,
  });
  const passwordCheckLimits: RequestHandler[] = [
    createRateLimiter(limits, {
      scope: "password_check_account",
      limit: c.RATE_LIMIT_PASSWORD_CHECKS_PER_ACCOUNT_PER_MINUTE,
      windowMs: MINUTE,
      key: byAccount,
    }),
    createRateLimiter(limits, {
      scope: "password_check_failures_account",
      limit: c.RATE_LIMIT_PASSWORD_CHECK_FAILURES_PER_ACCOUNT,
      windowMs: 15 * MINUTE,
      key: byAccount,
      // A wrong password (401), and a request this limit refused (429, so guessing on keeps the count
      // up); not a 409 (the account busy with an upload) or a 400 (a weak new password, after the
      // right old one), which would lock the owner out for trying again.
      failuresOnly: [401, 429],
    }),
  ];

  router.post("/register", registerLimit, async (req, res) => {
    const { email, password } = parse(credentialsSchema, req);
    const { token, warning } = await service.register(email, password);
    res.status(201).json(warning === undefined ? { token } : { token, warning });
  });

  router.post("/login", ...loginLimits, async (req, res) => {
    const { email, password } = parse(credentialsSchema, req);
    res.json(await service.login(email, password));
  });

  router.post("/refreshToken", auth, refreshLimit, async (req, res) => {
    res.json(await service.refresh(authOf(req).token));
  });

  router.post("/logout", auth, async (req, res) => {
    await service.logout(authOf(req).token);
    res.status(204).end();
  });

  router.get("/checkLogin", auth, (req, res) => {
    const { userId, role } = authOf(req);
    res.json({ user_id: userId, role });
  });

  router.post("/changePassword", auth, ...passwordCheckLimits, async (req, res) => {
    const { oldPassword, newPassword } = parse(changePasswordSchema, req);
    await service.changePassword(authOf(req).token, oldPassword, newPassword);
    res.json("Password changed.");
  });

  router.post("/deleteAccount", auth, ...passwordCheckLimits, async (req, res) => {
    const { password } = parse(deleteAccountSchema, req);
    await service.deleteAccount(authOf(req).token, password);
    res.json("Account deleted.");
  });

  return router;
}
