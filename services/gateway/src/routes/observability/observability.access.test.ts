import { Writable } from "node:stream";
import express from "express";
import request from "supertest";
import { createLogger } from "@roost/observability";
import { requireObservabilityAccess } from "./observability.access.js";

/** The loopback rule in production, and its warning, on a bare Express app (supertest connects from loopback). */
describe("requireObservabilityAccess in production", () => {
  function appWith(trustedProxyCidrs: string[]) {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString("utf8"));
        done();
      },
    });
    const logger = createLogger({ stream: sink, level: "warn" });
    const app = express();
    app.set("trust proxy", false);
    const config = { NODE_ENV: "production" as const, OBSERVABILITY_TOKEN: undefined, ALLOW_PUBLIC_OBSERVABILITY_ENDPOINTS: false, TRUSTED_PROXY_CIDRS: trustedProxyCidrs };
    app.get("/healthz", requireObservabilityAccess(config, logger), (_req, res) => {
      res.json({ ok: true });
    });
    app.use((_error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(403).json({ error: "forbidden" });
    });
    return { http: request(app), lines };
  }

  it("a forwarded loopback request is not local without TRUSTED_PROXY_CIDRS, and the warning is logged once", async () => {
    const { http, lines } = appWith([]);
    expect((await http.get("/healthz")).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await http.get("/healthz").set("X-Forwarded-For", "203.0.113.9")).status).toBe(403);
    expect((await http.get("/healthz").set("Forwarded", "for=203.0.113.9")).status).toBe(403);
    expect(lines.filter((line) => line.includes("TRUSTED_PROXY_CIDRS"))).toHaveLength(1);
  });

  it("with TRUSTED_PROXY_CIDRS set, the headers are req.ip's business and nothing is logged", async () => {
    const { http, lines } = appWith(["127.0.0.1/32"]);
    // trust proxy is off in this bare app, so req.ip stays loopback.
    expect((await http.get("/healthz").set("X-Forwarded-For", "203.0.113.9")).status).toBe(200);
    expect(lines).toHaveLength(0);
  });
});
