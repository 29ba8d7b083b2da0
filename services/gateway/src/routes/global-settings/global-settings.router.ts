import { Router } from "express";
import type { GatewayDeps } from "../../gateway.deps.js";
import type { Guards } from "../../http/guards.js";
import { badRequest } from "../../http/http-error.js";
import { createGlobalSettingsService } from "./global-settings.service.js";

/** GET /api/global/settings and POST /api/saveSettings (IsAdmin). */
export function globalSettingsRouter(deps: GatewayDeps, { admin }: Guards): Router {
  const router = Router();
  const service = createGlobalSettingsService(deps);

  router.get("/global/settings", ...admin, (_req, res) => {
    // Holds the GeoLite key: never stored by caches on the way.
    res.set("Cache-Control", "no-store").json(service.read());
  });

  router.post("/saveSettings", ...admin, async (req, res) => {
    const body: unknown = req.body;
    if (typeof body !== "object" || body === null || Array.isArray(body)) throw badRequest("Expected a JSON object");
    await service.save(body);
    res.json({ message: "Settings saved." });
  });

  return router;
}
