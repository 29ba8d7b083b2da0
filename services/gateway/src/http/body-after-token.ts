import type { Request, RequestHandler } from "express";
import type { TokenService } from "@roost/auth";
import { bearerToken } from "./auth.middleware.js";

/** /api routes that take a body without a token; every other route with a body needs one. */
export const ANONYMOUS_BODY_PATHS: ReadonlySet<string> = new Set(["/register", "/login", "/forgotpassword", "/resetpassword"]);

/** The path as Express routes it by default: case-insensitive, a trailing slash ignored. */
function routedPath(req: Request): string {
  const path = req.path.toLowerCase();
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
}

/**
 * Runs `parser` only for a request that may have its body read: one to an
 * anonymous route, or one carrying a token whose signature and expiry hold.
 * Any other body is left unread, and the route's own auth guard answers 401
 * (or the router 404), so a client without a token cannot make the gateway
 * parse a megabyte of JSON. Revocation is the route guard's to check.
 */
export function parseBodyAfterToken(parser: RequestHandler, tokens: Pick<TokenService, "verify">): RequestHandler {
  return (req, res, next) => {
    if (!ANONYMOUS_BODY_PATHS.has(routedPath(req))) {
      const raw = bearerToken(req);
      let valid = false;
      try {
        if (raw !== null) valid = Boolean(tokens.verify(raw));
      } catch {
        valid = false;
      }
      if (!valid) {
        next();
        return;
      }
    }
    return parser(req, res, next);
  };
}
