import { randomUUID } from "node:crypto";
import { ConfigError } from "@roost/config";
import { createDatabase } from "@roost/db";
import { loadBuildInfo, runService } from "@roost/lifecycle";
import { createMetrics, startMetricsListener } from "@roost/observability";
import { scraperConfigFromEnv, scraperInfraFromEnv } from "./config/scraper.config.js";
import { createScraperService } from "./scraper.service.js";

/** The scraper alone (split deployment); any number may run against one database and Redis. */
runService({
  config: () => {
    const scraper = scraperConfigFromEnv();
    const infra = scraperInfraFromEnv();
    const { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl } = infra;
    if (!databaseUrl || !redisUrl) throw new ConfigError(["DATABASE_URL and REDIS_URL are required when the scraper runs alone"]);
    return { ...infra, databaseUrl, redisUrl, scraper };
  },
  start: async ({ config, logger, shutdown }) => {
    const metrics = createMetrics();
    const db = createDatabase({ databaseUrl: config.databaseUrl, applicationName: "roost-scraper", maxConnections: 8 });
    shutdown.add("database", "postgres pool", () => db.close());
    const scraper = createScraperService({ config: config.scraper, db, redisUrl: config.redisUrl, logger, metrics, buildVersion: loadBuildInfo().buildVersion });
    shutdown.add("workers", "scraper", () => scraper.stop());
    if (config.SCRAPER_METRICS_PORT !== undefined) {
      const listener = await startMetricsListener({ metrics, health: { service: "scraper", instance_id: randomUUID() }, port: config.SCRAPER_METRICS_PORT, host: config.SCRAPER_METRICS_HOST });
      shutdown.add("listeners", "scraper metrics", () => listener.close());
    }
    await scraper.start();
  },
});
