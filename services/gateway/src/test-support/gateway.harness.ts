import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import request from "supertest";
import { databaseLimits } from "@roost/config";
import { createDatabase, type Database } from "@roost/db";
import { createLogger, createMetrics } from "@roost/observability";
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from "@roost/testkit";
import { gatewayConfigFromEnv } from "../config/gateway.config.js";
import type { GatewayDeps } from "../gateway.deps.js";
import { createGatewayService, type GatewayService } from "../gateway.service.js";
import { buildGatewayDeps } from "../gateway.wiring.js";

/**
 * A real gateway for integration tests: its own database (cloned from the
 * migrated template), its own Redis prefix, real BullMQ producers. Nothing
 * is mocked; the HTTP server is driven in-process with supertest.
 */
export interface GatewayHarness {
  service: GatewayService;
  deps: GatewayDeps;
  http: ReturnType<typeof request>;
  database: TestDatabase;
  db: Database;
  redis: TestRedis;
  dataDir: string;
  /** Registers a user (the first becomes admin) and returns its token and credentials. */
  register(email?: string, password?: string): Promise<{ token: string; email: string; password: string }>;
  close(): Promise<void>;
}

export const STRONG_PASSWORD = "Correct-Horse-42";

export async function startGatewayHarness(env: Record<string, string> = {}): Promise<GatewayHarness> {
  const database = await createTestDatabase();
  const redis = createTestRedis();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "roost-gw-"));
  const config = gatewayConfigFromEnv({
    JWT_SECRET: randomBytes(32).toString("hex"),
    QUEUE_PREFIX: redis.prefix.slice(0, -1),
    DATA_DIR: dataDir,
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    PORT: "0",
    PASSWORD_HASH_MEMORY_KIB: "1024",
    PASSWORD_HASH_TIME_COST: "1",
    ...env,
  });
  // DATABASE_URL in `env` points the gateway at another server (a test-owned one).
  const db = createDatabase({ databaseUrl: config.DATABASE_URL ?? database.url, ...databaseLimits(config) });
  let built: Awaited<ReturnType<typeof buildGatewayDeps>>;
  try {
    built = await buildGatewayDeps(config, {
      db,
      redisUrl: config.REDIS_URL ?? redis.url,
      logger: createLogger({ silent: true }),
      metrics: createMetrics({ defaultMetrics: false }),
      build: { buildVersion: "test", builtAt: new Date(0).toISOString() },
      instanceId: "test-instance",
    });
  } catch (error) {
    // Release what was opened, or a failing start would leave jest hanging.
    await db.close();
    await database.drop();
    await redis.cleanup();
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  const { deps, close } = built;
  const service = createGatewayService(deps);
  const http = request(service.handler);
  let counter = 0;
  return {
    service,
    deps,
    http,
    database,
    db,
    redis,
    dataDir,
    async register(email, password = STRONG_PASSWORD) {
      const address = email ?? `user${++counter}-${randomBytes(3).toString("hex")}@example.com`;
      const res = await http.post("/api/register").send({ email: address, password });
      if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
      return { token: (res.body as { token: string }).token, email: address, password };
    },
    async close() {
      await service.stop();
      await close();
      await db.close();
      await database.drop();
      await redis.cleanup();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
