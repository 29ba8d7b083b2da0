import { Router } from "express";
import { isBlockedUrl } from "@roost/global-config";
import type { GatewayDeps } from "../../gateway.deps.js";
import { authOf } from "../../http/auth.middleware.js";
import type { Guards } from "../../http/guards.js";
import { badRequest, notFound } from "../../http/http-error.js";
import { zodMessage } from "../../http/validation.js";
import { readSettings, updateSettings } from "./user-settings.repository.js";
import { userSettingsUpdateSchema } from "./user-settings.schema.js";

/** GET/POST /api/user/settings and GET /api/user/role . */
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
    const parsed = userSettingsUpdateSchema.safeParse(body);
    if (!parsed.success) throw badRequest(zodMessage(parsed.error));
    const blacklist = deps.globalConfig.current().website_blacklist;
    const blocked = (parsed.data.judges ?? []).filter((j) => isBlockedUrl(j.url, blacklist)).map((j) => j.url);
    if (blocked.length > 0) {
      throw badRequest("Judge URLs are blocked by the website blacklist", { blocked_judges: blocked, website_blacklist: blacklist });
    }
    const { userId } = authOf(req);
    await prisma.$transaction((tx) => updateSettings(tx, userId, parsed.data));
    res.json({ message: "Settings saved." });
  });

  router.get("/user/role", auth, (req, res) => {
    res.json(authOf(req).role);
  });

  return router;
}
