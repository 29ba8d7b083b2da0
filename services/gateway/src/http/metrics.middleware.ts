import type { Request, RequestHandler } from "express";
import type { Metrics } from "@roost/observability";

/** Label of requests no route matched (404s, CORS preflights), so raw paths never become labels. */
export const UNMATCHED_ROUTE = "unmatched";

/**
 * Counts and times every request, labelled by the route template
 * (`/api/proxies/:id`), never the raw path, so label cardinality stays fixed.
 *
 * The template is captured when the router assigns `req.route`: at that
 * moment `req.baseUrl` is the mount path of the matching router. Reading both
 * when the response finishes is wrong for errors, because a router restores
 * `req.baseUrl` on the way out (a 401 from `/api/checkLogin` would be
 * labelled `/checkLogin`).
 */
export function httpMetrics(metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const template = captureRouteTemplate(req);
    res.on("finish", () => {
      const labels = { method: req.method, route: template() ?? UNMATCHED_ROUTE, status: String(res.statusCode) };
      metrics.httpRequestsTotal.inc(labels);
      metrics.httpRequestDurationSeconds.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
}

/** Watches `req.route` assignments; returns a reader of the last matched `${baseUrl}${path}`. */
function captureRouteTemplate(req: Request): () => string | undefined {
  let route: unknown = req.route;
  let template: string | undefined;
  Object.defineProperty(req, "route", {
    configurable: true,
    enumerable: true,
    get: () => route,
    set: (value: unknown) => {
      route = value;
      if (typeof value === "object" && value !== null && "path" in value) template = `${req.baseUrl}${String(value.path)}`;
    },
  });
  return () => template;
}
