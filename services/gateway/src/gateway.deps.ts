import type { Redis } from "ioredis";
import type { PasswordHasher, RevocationStore, TokenService } from "@roost/auth";
import type { Database } from "@roost/db";
import type { GeoResolver } from "@roost/geo";
import type { GlobalConfigStore } from "@roost/global-config";
import type { HealthRegistry, Logger, Metrics } from "@roost/observability";
import type { checkQueue, mailQueue, maintenanceQueue, Producer, scrapeQueue } from "@roost/queue";
import type { GatewayConfig } from "./config/gateway.config.js";

export interface BuildInfo {
  buildVersion: string;
  builtAt: string;
}

export interface GatewayQueues {
  maintenance: Producer<typeof maintenanceQueue>;
  mail: Producer<typeof mailQueue>;
  check: Producer<typeof checkQueue>;
  scrape: Producer<typeof scrapeQueue>;
}

/** Everything the gateway needs, built once in main.ts (or by all-in-one). */
export interface GatewayDeps {
  config: GatewayConfig;
  logger: Logger;
  metrics: Metrics;
  db: Database;
  /** Command connection (fail-fast) for auth revocation and rate limits. */
  redis: Redis;
  tokens: TokenService;
  revocation: RevocationStore;
  hasher: PasswordHasher;
  health: HealthRegistry;
  queues: GatewayQueues;
  globalConfig: GlobalConfigStore;
  build: BuildInfo;
  /** Stable id of this process, reported by /healthz. */
  instanceId: string;
  /** Offline country/ASN databases, loaded on first use (proxy uploads). */
  geo: GeoResolver;
  /** HMAC key rotator passwords are stored under (the rotators verify with it). */
  rotatorPasswordKey: string;
}
