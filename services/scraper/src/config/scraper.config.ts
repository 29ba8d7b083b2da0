import { z } from "zod";
import { envBool, envInt, envLogLevel, envNodeEnv, envOptionalInt, envOptionalString, envOptionalUrl, envString, loadConfig } from "@roost/config";

/** Variables the scraper reads (besides DATABASE_URL/REDIS_URL, given by main or all-in-one). */
export const scraperEnvSchema = z.object({
  QUEUE_PREFIX: envString("roost"),
  /** Lets the scraper fetch sources on private, loopback and link-local addresses (and store such proxies). */
  ALLOW_PRIVATE_NETWORK_TARGETS: envBool(false),
  /** Source URLs fetched at once in this process. */
  SCRAPER_CONCURRENCY: envInt(4, 1, 256),
  /** Most scrape-url jobs waiting in Redis (all scrapers together). */
  SCRAPER_MAX_QUEUED_JOBS: envInt(8, 1, 10_000),
  /** Seconds a claimed URL may take before it is claimed again; at least the fetch timeout plus its ingests. */
  SCRAPER_LEASE_SECONDS: envInt(900, 30, 86_400),
  /** The operator's page named in the user agent `Roost/<version> (+<url>)` of robots.txt and list requests; unset = `Roost/<version>`. */
  SCRAPER_PROJECT_URL: envOptionalUrl(["http:", "https:"]),
});

export type ScraperConfig = z.output<typeof scraperEnvSchema>;

export function scraperConfigFromEnv(env: Record<string, string | undefined> = process.env): ScraperConfig {
  return loadConfig(scraperEnvSchema, env);
}

/** Connection settings when the scraper runs alone (all-in-one passes its own). */
export const scraperInfraSchema = z.object({
  DATABASE_URL: envOptionalString(),
  REDIS_URL: envOptionalString(),
  /** Checked as the gateway checks it: a value other than development, production or test stops the boot. */
  NODE_ENV: envNodeEnv,
  LOG_LEVEL: envLogLevel(),
  /** Port for /metrics and /healthz when the scraper runs alone; unset = no listener. */
  SCRAPER_METRICS_PORT: envOptionalInt(0, 65535),
  /** Interface for that listener; 127.0.0.1. */
  SCRAPER_METRICS_HOST: envString("127.0.0.1"),
});

export function scraperInfraFromEnv(env: Record<string, string | undefined> = process.env) {
  return loadConfig(scraperInfraSchema, env);
}
