import type { RequestHandler } from "express";

/**
 * Route classes of the contract. Routers attach them per route (not with
 * `router.use`) so an unknown path is a 404 for everyone, not a 401.
 */
export interface Guards {
  /** RequireAuth: a valid, unrevoked token. */
  auth: RequestHandler;
  /** IsAdmin: RequireAuth and role admin; use as `...admin`. */
  admin: RequestHandler[];
}
