import type { RequestHandler } from "express";
import type { Metrics } from "@roost/observability";

/**
 * Counts and times every request, labelled by the route template
 * (`/api/proxies/:id`), never the raw path, so label cardinality stays fixed.
 */
export function httpMetrics(metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      const route = req.route ? `${req.baseUrl}${String(req.route.path)}` : "unmatched";
      const labels = { method: req.method, route, status: String(res.statusCode) };
      metrics.httpRequestsTotal.inc(labels);
      metrics.httpRequestDurationSeconds.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
}
