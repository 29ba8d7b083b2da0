import pg from "pg";
import request from "supertest";
import { createMetrics } from "@roost/observability";
import { CHECK_TICK_SECONDS, checkQueue, createProducer, createRedisConnection, maintenanceQueue, maintenanceSchedules } from "@roost/queue";
import { ensureTemplate, testServerUrl, waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { startGatewayPeer } from "../../test-support/gateway-peer.js";

const ENDPOINTS = ["/healthz", "/readyz", "/metrics"] as const;
const PUBLIC_CLIENT = "203.0.113.7";

describe("observability endpoints", () => {
  let h: GatewayHarness;
  afterEach(async () => {
    await h?.close();
  });

  describe("outside production", () => {
    beforeEach(async () => {
      h = await startGatewayHarness({ TRUSTED_PROXY_CIDRS: "127.0.0.1/32" });
    });

    it("/healthz reports liveness and build metadata, to anyone", async () => {
      const res = await h.http.get("/healthz").set("X-Forwarded-For", PUBLIC_CLIENT);
      expect(res.status).toBe(200);
      expect(res.headers["cache-control"]).toBe("no-store");
      expect(res.body).toEqual({
        status: "ok",
        instance_id: "test-instance",
        buildVersion: "test",
        builtAt: new Date(0).toISOString(),
        uptime_seconds: expect.any(Number),
      });
      expect(Number.isInteger(res.body.uptime_seconds)).toBe(true);
      expect(res.body.uptime_seconds).toBeGreaterThanOrEqual(0);
    });

    it("/readyz is ready once the gateway started, and the maintenance schedulers and the check tick really exist in Redis", async () => {
      const before = await h.http.get("/readyz");
      expect(before.status).toBe(503);
      expect(before.body.components.startup_queue_bootstrap).toEqual({ status: "starting" });

      await h.service.start();
      const ready = await h.http.get("/readyz");
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({
        status: "ready",
        components: {
          database: { status: "up" },
          redis: { status: "up" },
          redis_memory: { status: "up", details: { used_bytes: expect.any(Number), max_bytes: expect.any(Number) } },
          startup_queue_bootstrap: { status: "up", details: expect.any(Object) },
        },
      });

      // Read the schedulers back through a Queue of our own on the test prefix.
      const connection = createRedisConnection(h.redis.url, "producer");
      const maintenance = createProducer(maintenanceQueue, { connection, prefix: h.deps.config.QUEUE_PREFIX });
      try {
        const schedulers = await maintenance.queue.getJobSchedulers();
        expect(schedulers.map((s) => ({ key: s.key, every: s.every })).sort((a, b) => a.key.localeCompare(b.key))).toEqual(
          Object.entries(maintenanceSchedules)
            .map(([key, seconds]) => ({ key, every: seconds * 1000 }))
            .sort((a, b) => a.key.localeCompare(b.key)),
        );
        // Due work starts now, not a period later: every scheduler already produced a job.
        const jobs = await maintenance.queue.getJobs(["waiting", "delayed", "active", "completed", "failed", "prioritized"]);
        expect([...new Set(jobs.map((job) => job.name))].sort()).toEqual(Object.keys(maintenanceSchedules).sort());
        // The check tick is registered too, and the report names it.
        const checks = createProducer(checkQueue, { connection, prefix: h.deps.config.QUEUE_PREFIX });
        try {
          expect((await checks.queue.getJobSchedulers()).map((s) => ({ key: s.key, every: s.every }))).toEqual([{ key: "check-tick", every: CHECK_TICK_SECONDS * 1000 }]);
        } finally {
          await checks.close();
        }
        expect((ready.body as { components: { startup_queue_bootstrap: { details: { schedulers: string[] } } } }).components.startup_queue_bootstrap.details.schedulers).toContain("check-tick");
      } finally {
        await maintenance.close();
        connection.disconnect();
      }
    });

    it("/readyz is not_ready with 503 while the database is unreachable, and ready again after", async () => {
      await h.service.start();
      await h.http.get("/readyz").expect(200);

      // The database disappears for real: dropped with its connections killed.
      await h.database.drop();
      const down = await h.http.get("/readyz");
      expect(down.status).toBe(503);
      expect(down.headers["content-type"]).toMatch(/application\/json/);
      expect(down.body.status).toBe("not_ready");
      expect(down.body.components.database).toEqual({ status: "down", details: { error: expect.any(String) } });
      expect(down.body.components.redis).toEqual({ status: "up" });

      const admin = new pg.Client({ connectionString: testServerUrl });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE "${h.database.name}" TEMPLATE "${await ensureTemplate()}"`);
      } finally {
        await admin.end();
      }
      await waitFor(async () => (await h.http.get("/readyz")).status === 200, { timeoutMs: 10_000, what: "readiness to return" });
    });

    it("/metrics serves the svc_* families and process metrics, routes labelled by template", async () => {
      const metrics = createMetrics();
      const peer = await startGatewayPeer(h, { metrics });
      try {
        const { token } = await h.register();
        await peer.http.get("/api/checkLogin").set("Authorization", `Bearer ${token}`).expect(200);
        await peer.http.get("/api/checkLogin").expect(401);
        await peer.http.get("/api/checkLogin").set("Authorization", "Bearer not-a-token").expect(401);
        await peer.http.get("/api/no-such-resource/12345").expect(404);
        await peer.http.get("/api/no-such-resource/12345").set("Authorization", `Bearer ${token}`).expect(404);

        const res = await peer.http.get("/metrics");
        expect(res.status).toBe(200);
        expect(res.headers["content-type"]).toBe(metrics.registry.contentType);
        const text = res.text;
        for (const family of [
          "svc_http_requests_total",
          "svc_http_request_duration_seconds",
          "svc_auth_failures_total",
          "svc_rate_limit_blocks_total",
          "svc_rotating_proxy_errors_total",
          "process_cpu_user_seconds_total",
          "process_resident_memory_bytes",
          "nodejs_eventloop_lag_seconds",
        ]) {
          expect({ family, present: text.includes(`# TYPE ${family} `) }).toEqual({ family, present: true });
        }
        expect(text).toContain('svc_http_requests_total{method="GET",route="/api/checkLogin",status="200"} 1');
        expect(text).toContain('svc_http_requests_total{method="GET",route="/api/checkLogin",status="401"} 2');
        expect(text).toContain('svc_http_requests_total{method="GET",route="unmatched",status="404"} 2');
        expect(text).toContain('svc_auth_failures_total{reason="missing_token"} 1');
        expect(text).not.toContain("12345");
      } finally {
        await peer.close();
      }
    });
  });

  describe("in production", () => {
    it("refuses a public caller behind a trusted proxy unless it presents the token", async () => {
      h = await startGatewayHarness({ NODE_ENV: "production", TRUSTED_PROXY_CIDRS: "127.0.0.1/32", OBSERVABILITY_TOKEN: "obs-token-1234" });
      for (const path of ENDPOINTS) {
        const refused = await h.http.get(path).set("X-Forwarded-For", PUBLIC_CLIENT);
        expect([path, refused.status, refused.body]).toEqual([path, 403, { error: expect.any(String) }]);
        expect(refused.headers["content-type"]).toMatch(/application\/json/);

        const wrong = await h.http.get(path).set("X-Forwarded-For", PUBLIC_CLIENT).set("X-Observability-Token", "obs-token-123");
        expect([path, wrong.status]).toEqual([path, 403]);
        const empty = await h.http.get(path).set("X-Forwarded-For", PUBLIC_CLIENT).set("X-Observability-Token", "");
        expect([path, empty.status]).toEqual([path, 403]);

        const withToken = await h.http.get(path).set("X-Forwarded-For", PUBLIC_CLIENT).set("X-Observability-Token", "obs-token-1234");
        // /readyz answers 503 until start(); what matters here is that it was not refused.
        expect([path, withToken.status === 403]).toEqual([path, false]);
        expect([path, withToken.status]).toEqual([path, path === "/readyz" ? 503 : 200]);

        // The proxy itself (loopback, no forwarded client) is let in.
        const fromProxyHost = await h.http.get(path);
        expect([path, fromProxyHost.status === 403]).toEqual([path, false]);
      }
    });

    it("without TRUSTED_PROXY_CIDRS a loopback socket is local only when it forwards nobody (same-host reverse proxy)", async () => {
      h = await startGatewayHarness({ NODE_ENV: "production" });
      for (const path of ENDPOINTS) {
        for (const [header, value] of [["X-Forwarded-For", PUBLIC_CLIENT], ["Forwarded", `for=${PUBLIC_CLIENT}`]] as const) {
          const forwarded = await h.http.get(path).set(header, value);
          expect([path, header, forwarded.status, forwarded.body]).toEqual([path, header, 403, { error: expect.any(String) }]);
        }
        // The proxy's own health check (no forwarding header) is local.
        const direct = await h.http.get(path);
        expect([path, direct.status === 403]).toEqual([path, false]);
        const withToken = await h.http.get(path).set("X-Forwarded-For", PUBLIC_CLIENT).set("X-Observability-Token", "x");
        expect([path, withToken.status]).toEqual([path, 403]);
      }
      // The same over a real IPv4 socket (supertest's own server gives ::ffff:127.0.0.1).
      const address = await h.service.start();
      expect((await request(`http://127.0.0.1:${address.port}`).get("/healthz").set("X-Forwarded-For", PUBLIC_CLIENT)).status).toBe(403);
      expect((await request(`http://127.0.0.1:${address.port}`).get("/healthz")).status).toBe(200);
    });

    it("serves everyone with ALLOW_PUBLIC_OBSERVABILITY_ENDPOINTS=true, and no empty token ever matches", async () => {
      h = await startGatewayHarness({ NODE_ENV: "production", TRUSTED_PROXY_CIDRS: "127.0.0.1/32", OBSERVABILITY_TOKEN: "" });
      const refused = await h.http.get("/healthz").set("X-Forwarded-For", PUBLIC_CLIENT).set("X-Observability-Token", "");
      expect(refused.status).toBe(403);
      await h.close();

      h = await startGatewayHarness({
        NODE_ENV: "production",
        TRUSTED_PROXY_CIDRS: "127.0.0.1/32",
        ALLOW_PUBLIC_OBSERVABILITY_ENDPOINTS: "true",
      });
      for (const path of ENDPOINTS) {
        const res = await h.http.get(path).set("X-Forwarded-For", PUBLIC_CLIENT);
        expect([path, res.status === 403]).toEqual([path, false]);
      }
    });
  });
});
