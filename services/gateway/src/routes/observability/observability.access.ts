import { createHash, timingSafeEqual } from "node:crypto";
import type { Request, RequestHandler } from "express";
import type { Logger } from "@roost/observability";
import type { GatewayConfig } from "../../config/gateway.config.js";
import { isLoopback } from "../../http/client-ip.js";
import { forbidden } from "../../http/http-error.js";

export const OBSERVABILITY_TOKEN_HEADER = "X-Observability-Token";

/**
 * Constant-time comparison of a presented token with the configured one.
 * Both sides are hashed first so the comparison time does not depend on the
 * length either; an empty or missing token never matches.
 */
export function observabilityTokenMatches(expected: string | undefined, presented: string | undefined): boolean {
  if (!expected || !presented) return false;
  const digest = (value: string) => createHash("sha256").update(value, "utf8").digest();
  return timingSafeEqual(digest(expected), digest(presented));
}

/**
 * The contract's observability rule, as a named check for /healthz, /readyz
 * and /metrics. Outside production everyone may read them. In production
 * (NODE_ENV=production) a caller is let in when it is loopback (`req.ip`,
 * which believes X-Forwarded-For only from TRUSTED_PROXY_CIDRS; with none
 * set, a loopback request carrying X-Forwarded-For or Forwarded is not), presents
 * X-Observability-Token equal to OBSERVABILITY_TOKEN, or when
 * ALLOW_PUBLIC_OBSERVABILITY_ENDPOINTS=true; everyone else gets 403 `{error}`.
 */
export function requireObservabilityAccess(
  config: Pick<GatewayConfig, "NODE_ENV" | "OBSERVABILITY_TOKEN" | "ALLOW_PUBLIC_OBSERVABILITY_ENDPOINTS" | "TRUSTED_PROXY_CIDRS">,
  logger?: Pick<Logger, "warn">,
): RequestHandler {
  const open = config.NODE_ENV !== "production" || config.ALLOW_PUBLIC_OBSERVABILITY_ENDPOINTS;
  let warned = false;
  // A loopback socket carrying forwarding headers, with no trusted proxies configured, is a
  // same-host reverse proxy relaying someone else: not local.
  const isLocal = (req: Request): boolean => {
    if (!isLoopback(req.ip)) return false;
    if (config.TRUSTED_PROXY_CIDRS.length > 0 || (req.get("X-Forwarded-For") === undefined && req.get("Forwarded") === undefined)) return true;
    if (!warned) {
      warned = true;
      logger?.warn("forwarded request from loopback without TRUSTED_PROXY_CIDRS: not treated as local; set TRUSTED_PROXY_CIDRS to the reverse proxy's address");
    }
    return false;
  };
  return (req, _res, next) => {
    if (open || isLocal(req) || observabilityTokenMatches(config.OBSERVABILITY_TOKEN, req.get(OBSERVABILITY_TOKEN_HEADER))) {
      next();
      return;
    }
    throw forbidden("Observability endpoints are not public; call from loopback or send X-Observability-Token");
  };
}
