import { Router } from "express";
import type { GatewayDeps } from "../../gateway.deps.js";
import { authOf } from "../../http/auth.middleware.js";
import type { Guards } from "../../http/guards.js";
import { badRequest, notFound } from "../../http/http-error.js";
import { readSettings } from "./user-settings.repository.js";
import { saveUserSettings } from "./user-settings.service.js";

/** GET/POST /api/user/settings and GET /api/user/role. */
export function userSettingsRouter(deps: GatewayDeps, { auth }: Guards): Router {
  const router = Router();
  const { prisma } = deps.db;

  router.get("/user/settings", auth, async (req, res) => {
    const settings = await readSettings(prisma, authOf(req).userId);
    if (!settings) throw notFound("User not found");
    res.json(settings);
  });

  router.post("/user/settings", auth, async (req, res) => {
    const body: unknown = req.body;
    if (typeof body !== "object" || body === null || Array.isArray(body)) throw badRequest("Expected a JSON object");
    const rejection = await saveUserSettings(deps, authOf(req).userId, body);
    if (rejection) throw badRequest(rejection.message, rejection.extra);
    res.json({ message: "Settings saved." });
  });

  router.get("/user/role", auth, (req, res) => {
    res.json(authOf(req).role);
  });

  return router;
}
