import { Router } from "express";
import type { GatewayDeps } from "../../gateway.deps.js";
import { authOf } from "../../http/auth.middleware.js";
import type { Guards } from "../../http/guards.js";
import { getDashboardInfo } from "./dashboard.service.js";

/** GET /api/getDashboardInfo. */
export function dashboardRouter(deps: GatewayDeps, { auth }: Guards): Router {
  const router = Router();
  router.get("/getDashboardInfo", auth, async (req, res) => {
    res.json(await getDashboardInfo(deps.db, authOf(req).userId));
  });
  return router;
}
