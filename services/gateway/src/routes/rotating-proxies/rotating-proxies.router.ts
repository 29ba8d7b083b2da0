import { Router } from "express";

import type { GatewayDeps } from "../../gateway.deps.js";
import { authOf } from "../../http/auth.middleware.js";
import type { Guards } from "../../http/guards.js";
import { notFound } from "../../http/http-error.js";
import { createRotatingProxiesService } from "./rotating-proxies.service.js";

function rotatorId(raw: string | string[] | undefined): number {
  const id = typeof raw === "string" && /^[1-9]\d{0,9}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(id) || id > 2_147_483_647) throw notFound("Rotating proxy not found");
  return id;
}

/** /api/rotatingProxies: list, create, delete, next upstream, and the instances with free ports. */
export function rotatingProxiesRouter(deps: GatewayDeps, { auth }: Guards): Router {
  const router = Router();
  const service = createRotatingProxiesService(deps);

  router.get("/rotatingProxies", auth, async (req, res) => {
    res.json({ rotating_proxies: await service.list(authOf(req).userId) });
  });

  router.get("/rotatingProxies/instances", auth, async (_req, res) => {
    res.json({ instances: await service.instances() });
  });

  router.post("/rotatingProxies", auth, async (req, res) => {
    res.status(201).json(await service.create(authOf(req).userId, req.body));
  });

  router.delete("/rotatingProxies/:id", auth, async (req, res) => {
    await service.remove(authOf(req).userId, rotatorId(req.params.id));
    res.status(204).end();
  });

  router.post("/rotatingProxies/:id/next", auth, async (req, res) => {
    res.json(await service.next(authOf(req).userId, rotatorId(req.params.id)));
  });

  return router;
}
