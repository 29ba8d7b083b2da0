import { ConfigError, databaseLimits } from "@roost/config";
import { createDatabase } from "@roost/db";
import { runService } from "@roost/lifecycle";
import { createMetrics, startMetricsListener } from "@roost/observability";
import { mailerConfigFromEnv, mailerInfraFromEnv } from "./config/mailer.config.js";
import { createMailerService } from "./mailer.service.js";

/** The mailer alone (split deployment); any number of these may run against one database. */
runService({
  config: () => {
    const mailer = mailerConfigFromEnv();
    const infra = mailerInfraFromEnv();
    const { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl } = infra;
    const missing = [
      ...(databaseUrl ? [] : ["DATABASE_URL: required when the mailer runs alone"]),
      ...(redisUrl ? [] : ["REDIS_URL: required when the mailer runs alone"]),
      ...(mailer.smtp ? [] : ["SMTP_HOST, MAIL_FROM_ADDRESS, PUBLIC_APP_URL: required when the mailer runs alone"]),
    ];
    if (!databaseUrl || !redisUrl || missing.length > 0) throw new ConfigError(missing);
    return { ...infra, databaseUrl, redisUrl, mailer };
  },
  start: async ({ config, logger, shutdown }) => {
    const metrics = createMetrics();
    const maxConnections = config.mailer.MAILER_CONCURRENCY + 2;
    const db = createDatabase({ databaseUrl: config.databaseUrl, applicationName: "roost-mailer", maxConnections, ...databaseLimits(config) });
    shutdown.add("database", "postgres pool", () => db.close());
    const mailer = createMailerService({ config: config.mailer, db, redisUrl: config.redisUrl, logger, metrics });
    shutdown.add("workers", "mailer", () => mailer.stop());
    if (config.MAILER_METRICS_PORT !== undefined) {
      const port = config.MAILER_METRICS_PORT;
      const listener = await startMetricsListener({ metrics, health: { workerId: mailer.workerId }, port, host: config.MAILER_METRICS_HOST });
      shutdown.add("listeners", "mailer metrics", () => listener.close());
    }
    await mailer.start();
  },
});
