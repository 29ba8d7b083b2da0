import { PassThrough } from "node:stream";
import express from "express";
import request from "supertest";
import { RevocationUnavailableError } from "@roost/auth";
import { createLogger } from "@roost/observability";
import { waitFor } from "@roost/testkit";
import { CallerGone } from "../db-limits/statement-limiter.js";
import { errorHandler, notFoundHandler } from "./error-handler.js";
import { HttpError } from "./http-error.js";

function appThrowing(): express.Express {
  const app = express();
  app.use(express.json({ limit: 1024 }));
  app.get("/bug", () => {
    throw new Error("secret internals: password=hunter2");
  });
  app.get("/async-bug", async () => {
    await Promise.resolve();
    throw new TypeError("cannot read x of undefined");
  });
  app.get("/http-error", () => {
    throw new HttpError(429, "Slow down", { limit: 5 }, { "Retry-After": "7" });
  });
  app.get("/revocation-down", () => {
    throw new RevocationUnavailableError(new Error("ECONNREFUSED"));
  });
  // ioredis's failures when Redis cannot serve (deadline, closed, full under noeviction), possibly wrapped.
  app.get("/redis-down/:kind", (req) => {
    const errors: Record<string, Error> = {
      timeout: new Error("Command timed out"),
      closed: new Error("Connection is closed."),
      oom: new Error("OOM command not allowed when used memory > 'maxmemory'."),
      wrapped: new Error("instances not listed", { cause: Object.assign(new Error("Reached the max retries per request limit (which is 1)."), { name: "MaxRetriesPerRequestError" }) }),
      other: new Error("Command timed out? no: a bug that mentions it"),
    };
    throw errors[String(req.params.kind)];
  });
  app.post("/echo", (req, res) => {
    res.json(req.body);
  });
  app.use(notFoundHandler);
  app.use(errorHandler(createLogger({ silent: true })));
  return app;
}

describe("errorHandler", () => {
  const http = request(appThrowing());

  it("answers unexpected errors 500 {error} without their details", async () => {
    for (const path of ["/bug", "/async-bug"]) {
      const res = await http.get(path);
      expect([path, res.status, res.body]).toEqual([path, 500, { error: "Internal server error" }]);
      expect(res.headers["content-type"]).toMatch(/application\/json/);
      expect(res.text).not.toMatch(/hunter2|undefined|at /);
    }
  });

  it("keeps an HttpError's status, extra fields and headers", async () => {
    const res = await http.get("/http-error");
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ error: "Slow down", limit: 5 });
    expect(res.headers["retry-after"]).toBe("7");
  });

  it("maps an unavailable revocation store to 503", async () => {
    const res = await http.get("/revocation-down");
    expect([res.status, res.body]).toEqual([503, { error: expect.any(String) }]);
  });

  it("answers Redis being unavailable 503 {error} with Retry-After, not 500", async () => {
    for (const kind of ["timeout", "closed", "oom", "wrapped"]) {
      const res = await http.get(`/redis-down/${kind}`);
      expect([kind, res.status, res.body, res.headers["retry-after"]]).toEqual([kind, 503, { error: expect.any(String) }, "1"]);
    }
    expect((await http.get("/redis-down/other")).status).toBe(500);
  });

  it("turns body-parser failures into their 4xx with {error}", async () => {
    const large = await http.post("/echo").set("Content-Type", "application/json").send(JSON.stringify({ a: "x".repeat(2000) }));
    expect([large.status, large.body]).toEqual([413, { error: "Request body too large" }]);
    const malformed = await http.post("/echo").set("Content-Type", "application/json").send("{nope");
    expect([malformed.status, malformed.body]).toEqual([400, { error: "Malformed JSON body" }]);
    const charset = await http.post("/echo").set("Content-Type", "application/json; charset=klingon").send("{}");
    expect([charset.status, charset.body]).toEqual([415, { error: "Unsupported charset: send JSON as UTF-8" }]);
    const unknownEncoding = await http.post("/echo").set("Content-Type", "application/json").set("Content-Encoding", "klingon").send("{}");
    expect([unknownEncoding.status, unknownEncoding.body]).toEqual([
      415,
      { error: "Compressed request bodies are not accepted: send the body without Content-Encoding" },
    ]);
  });

  it("answers unknown routes 404 {error}", async () => {
    const res = await http.get("/nowhere");
    expect([res.status, res.body]).toEqual([404, { error: "Not found" }]);
  });

  it("neither answers nor logs a statement skipped because its client had gone, and logs a real failure of the same request", async () => {
    const log = new PassThrough();
    let logged = "";
    log.on("data", (chunk: Buffer) => (logged += chunk.toString()));
    const app = express();
    app.get("/gone", (_req, res) => {
      res.destroy(); // the client's connection, as when it has left
      throw new CallerGone();
    });
    app.get("/gone-and-broken", (_req, res) => {
      res.destroy();
      throw new Error("a real failure");
    });
    app.use(errorHandler(createLogger({ stream: log })));
    await expect(request(app).get("/gone")).rejects.toThrow(/socket hang up|ECONNRESET/);
    await expect(request(app).get("/gone-and-broken")).rejects.toThrow(/socket hang up|ECONNRESET/);
    // The second request's entry is there, so the first one's would be too: it is the only one.
    await waitFor(() => logged.includes("unhandled request error"), { what: "the real failure to be logged" });
    expect(logged.match(/unhandled request error/g)).toHaveLength(1);
    expect(logged).toContain("a real failure");
  });
});
