import http from "node:http";
import { ConfigError } from "@roost/config";
import { createDatabase } from "@roost/db";
import { createShutdownCoordinator } from "@roost/lifecycle";
import { createLogger, createMetrics } from "@roost/observability";
import { mailerConfigFromEnv, mailerInfraFromEnv } from "./config/mailer.config.js";
import { createMailerService } from "./mailer.service.js";

/** The mailer alone (split deployment); any number of these may run against one database. */
async function main(): Promise<void> {
  const config = mailerConfigFromEnv();
  const infra = mailerInfraFromEnv();
  const logger = createLogger({ level: infra.LOG_LEVEL });
  const missing = [
    ...(infra.DATABASE_URL ? [] : ["DATABASE_URL: required when the mailer runs alone"]),
    ...(infra.REDIS_URL ? [] : ["REDIS_URL: required when the mailer runs alone"]),
    ...(config.smtp ? [] : ["SMTP_HOST, MAIL_FROM_ADDRESS, PUBLIC_APP_URL: required when the mailer runs alone"]),
  ];
  if (!infra.DATABASE_URL || !infra.REDIS_URL || missing.length > 0) throw new ConfigError(missing);

  const shutdown = createShutdownCoordinator({ logger });
  const metrics = createMetrics();
  const db = createDatabase({ databaseUrl: infra.DATABASE_URL, applicationName: "roost-mailer", maxConnections: config.MAILER_CONCURRENCY + 2 });
  shutdown.add("database", "postgres pool", () => db.close());
  const mailer = createMailerService({ config, db, redisUrl: infra.REDIS_URL, logger, metrics });
  shutdown.add("workers", "mailer", () => mailer.stop());

  if (infra.MAILER_METRICS_PORT !== undefined) {
    // Split deployments have no gateway in this process to serve /metrics.
    const server = http.createServer((req, res) => {
      if (req.url === "/metrics") {
        void metrics.registry.metrics().then((body) => {
          res.writeHead(200, { "Content-Type": metrics.registry.contentType });
          res.end(body);
        });
      } else if (req.url === "/healthz") {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ status: "ok", workerId: mailer.workerId }));
      } else {
        res.writeHead(404, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ error: "Not found" }));
      }
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(infra.MAILER_METRICS_PORT, infra.MAILER_METRICS_HOST, () => resolve());
    });
    shutdown.add("listeners", "mailer metrics", () => new Promise<void>((resolve) => server.close(() => resolve())));
  }

  await mailer.start();
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => void shutdown.run(signal).then((clean) => process.exit(clean ? 0 : 1)));
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
