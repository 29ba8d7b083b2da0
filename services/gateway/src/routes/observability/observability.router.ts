import { Router } from "express";
import type { GatewayDeps } from "../../gateway.deps.js";
import { requireObservabilityAccess } from "./observability.access.js";
import { redisMemoryCheck } from "./redis-memory.health.js";

/** Milliseconds each readiness check may take before its component counts as down. */
const READINESS_CHECK_TIMEOUT_MS = 2000;

/**
 * GET /healthz (liveness and build), /readyz (readiness of database, redis,
 * redis_memory and startup_queue_bootstrap; 503 when not_ready) and /metrics (Prometheus text),
 * at the root, behind the observability rule. Answers are never cached.
 */
export function observabilityRouter(deps: GatewayDeps): Router {
  const router = Router();
  const access = requireObservabilityAccess(deps.config, deps.logger);
  // Not critical: a Redis near its bound still serves, so readiness is `degraded`, not `not_ready`.
  deps.health.register("redis_memory", redisMemoryCheck(deps.redis), { critical: false });

  router.get("/healthz", access, (_req, res) => {
    res.set("Cache-Control", "no-store").json({
      status: "ok",
      instance_id: deps.instanceId,
      buildVersion: deps.build.buildVersion,
      builtAt: deps.build.builtAt,
      uptime_seconds: Math.floor(process.uptime()),
    });
  });

  router.get("/readyz", access, async (_req, res) => {
    const report = await deps.health.check(READINESS_CHECK_TIMEOUT_MS);
    res
      .status(report.status === "not_ready" ? 503 : 200)
      .set("Cache-Control", "no-store")
      .json(report);
  });

  router.get("/metrics", access, async (_req, res) => {
    const text = await deps.metrics.registry.metrics();
    res.set("Cache-Control", "no-store").type(deps.metrics.registry.contentType).send(text);
  });

  return router;
}
