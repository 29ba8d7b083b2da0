import express, { Router } from "express";
import request from "supertest";
import { createLogger, createMetrics } from "@roost/observability";
import { errorHandler, notFoundHandler } from "./error-handler.js";
import { unauthorized } from "./http-error.js";
import { httpMetrics } from "./metrics.middleware.js";

/** An app shaped like the gateway's: metrics first, routers mounted under /api, JSON 404 and error handler last. */
function appWith(metrics: ReturnType<typeof createMetrics>) {
  const app = express();
  app.use(httpMetrics(metrics));
  const refuseOdd: express.RequestHandler = (req, _res, next) => {
    if (Number(req.params.id) % 2 === 1) throw unauthorized();
    next();
  };
  const api = Router();
  const nested = Router();
  nested.get("/things/:id", refuseOdd, (req, res) => {
    res.json({ id: req.params.id });
  });
  api.use(nested);
  api.get("/users/:userId/items/:itemId", (_req, res) => {
    res.json({});
  });
  app.use("/api", api);
  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.use(notFoundHandler);
  app.use(errorHandler(createLogger({ silent: true })));
  return app;
}

async function countsByLabels(metrics: ReturnType<typeof createMetrics>) {
  const { values } = await metrics.httpRequestsTotal.get();
  return values.map((v) => ({ ...v.labels, count: v.value }));
}

describe("httpMetrics", () => {
  it("labels requests by route template, for successes and errors alike", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const http = request(appWith(metrics));
    expect((await http.get("/api/things/10")).status).toBe(200);
    expect((await http.get("/api/things/12")).status).toBe(200);
    expect((await http.get("/api/things/11")).status).toBe(401);
    expect((await http.get("/api/users/7/items/9")).status).toBe(200);
    expect((await http.get("/healthz")).status).toBe(200);
    expect(await countsByLabels(metrics)).toEqual(
      expect.arrayContaining([
        { method: "GET", route: "/api/things/:id", status: "200", count: 2 },
        { method: "GET", route: "/api/things/:id", status: "401", count: 1 },
        { method: "GET", route: "/api/users/:userId/items/:itemId", status: "200", count: 1 },
        { method: "GET", route: "/healthz", status: "200", count: 1 },
      ]),
    );
  });

  it("labels unknown paths `unmatched` and never exposes a raw path", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const http = request(appWith(metrics));
    expect((await http.get("/api/things/10/extra")).status).toBe(404);
    expect((await http.post("/api/things/10")).status).toBe(404);
    expect((await http.get("/no/such/path")).status).toBe(404);
    expect(await countsByLabels(metrics)).toEqual([
      { method: "GET", route: "unmatched", status: "404", count: 2 },
      { method: "POST", route: "unmatched", status: "404", count: 1 },
    ]);
    const text = await metrics.registry.metrics();
    expect(text).toContain('svc_http_request_duration_seconds_count{method="GET",route="unmatched",status="404"} 2');
    expect(text).not.toMatch(/things\/10|no\/such/);
  });
});
