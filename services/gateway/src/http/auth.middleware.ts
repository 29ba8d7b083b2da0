import type { IncomingMessage } from "node:http";
import type { Request, RequestHandler } from "express";
import { InvalidTokenError, type Role, type TokenService, type VerifiedToken, type RevocationStore } from "@roost/auth";
import type { Metrics } from "@roost/observability";
import { forbidden, unauthorized } from "./http-error.js";

export interface AuthContext {
  userId: number;
  role: Role;
  token: VerifiedToken;
}

const contexts = new WeakMap<Request, AuthContext>();

/** The caller of an authenticated route; throws if the route forgot requireAuth. */
export function authOf(req: Request): AuthContext {
  const context = contexts.get(req);
  if (!context) throw new Error("authOf() on a route without requireAuth");
  return context;
}

/** Bearer token from the Authorization header, or null. */
export function bearerToken(req: Request): string | null {
  return bearerTokenOf(req.get("Authorization"));
}

/** Bearer token of an Authorization header value, or null. */
export function bearerTokenOf(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

const revocationAnswers = new WeakMap<IncomingMessage, { jti: string; revoked: Promise<boolean> }>();

/**
 * The revocation answer for this request's token, asked at most once per
 * request: a request the proxy-page fast path hands back to the pipeline
 * (revoked token, revocation store down) is not checked, or waited on, twice.
 */
export function isRevokedOnce(revocation: RevocationStore, req: IncomingMessage, token: VerifiedToken): Promise<boolean> {
  const known = revocationAnswers.get(req);
  if (known?.jti === token.jti) return known.revoked;
  const revoked = revocation.isRevoked(token);
  revoked.catch(() => undefined);
  revocationAnswers.set(req, { jti: token.jti, revoked });
  return revoked;
}

/** RequireAuth: a valid, unrevoked HS256 token. 401 `{error}` otherwise. */
export function requireAuth(deps: { tokens: TokenService; revocation: RevocationStore; metrics: Metrics }): RequestHandler {
  return async (req, _res, next) => {
    const raw = bearerToken(req);
    if (!raw) {
      deps.metrics.authFailuresTotal.inc({ reason: "missing_token" });
      throw unauthorized("Missing bearer token");
    }
    let token: VerifiedToken;
    try {
      token = deps.tokens.verify(raw);
    } catch (error) {
      const reason = error instanceof InvalidTokenError ? error.reason : "invalid";
      deps.metrics.authFailuresTotal.inc({ reason: `token_${reason}` });
      throw unauthorized(reason === "expired" ? "Token expired" : "Invalid token");
    }
    if (await isRevokedOnce(deps.revocation, req, token)) {
      deps.metrics.authFailuresTotal.inc({ reason: "token_revoked" });
      throw unauthorized("Token revoked");
    }
    contexts.set(req, { userId: token.user_id, role: token.role, token });
    next();
  };
}

/** IsAdmin: after requireAuth; 403 for a non-admin. */
export const requireAdmin: RequestHandler = (req, _res, next) => {
  if (authOf(req).role !== "admin") throw forbidden("Admin role required");
  next();
};
