import type { Database } from "@roost/db";
import { createGeoLiteReloader, createStoredGeoResolver } from "@roost/geo";
import { createGlobalConfigStore, type GlobalConfig } from "@roost/global-config";
import { OutboundGuard } from "@roost/net";
import type { Logger, Metrics } from "@roost/observability";
import { checkQueue, createConsumer, createProducer, createRedisConnection, SCRAPE_TICK_SECONDS, scrapeQueue, type Consumer } from "@roost/queue";
import { RobotsCache, runScrapeSource, runScrapeTick, runScrapeUrl, scraperUserAgent, type ScrapeDeps, type ScrapeSettings } from "@roost/scraping";
import type { ScraperConfig } from "./config/scraper.config.js";

export interface ScraperDeps {
  config: ScraperConfig;
  db: Database;
  redisUrl: string;
  logger: Logger;
  metrics: Metrics;
  /** Named in the user agent. */
  buildVersion?: string;
  /** Test-only: the outbound guard to use instead of one built from ALLOW_PRIVATE_NETWORK_TARGETS. */
  guard?: OutboundGuard;
}

export interface ScraperService {
  start(): Promise<void>;
  /** Stops taking jobs, lets running scrapes finish (their URLs are leased either way), closes connections. */
  stop(): Promise<void>;
}

function settingsOf(current: GlobalConfig): ScrapeSettings {
  return {
    intervalSeconds: current.scraper.interval_seconds,
    timeoutMs: current.scraper.timeout_ms,
    maxBytes: current.scraper.max_bytes,
    respectRobots: current.scraper.respect_robots_txt,
    websiteBlacklist: current.website_blacklist,
    proxyLimits: current.proxy_limits,
  };
}

/**
 * The scraper: consumes the `scrape` queue, where `scrape-tick` (a job
 * scheduler this service registers, and wake-ups) claims due source URLs into
 * `scrape-url` jobs, each fetched once for every follower (docs/scraper.md).
 */
export function createScraperService(deps: ScraperDeps): ScraperService {
  const logger = deps.logger.child({ service: "scraper" });
  const { config } = deps;
  const prefix = `${config.QUEUE_PREFIX}:`;
  const commands = createRedisConnection(deps.redisUrl, "client");
  const subscriber = createRedisConnection(deps.redisUrl, "subscriber");
  const producerConnection = createRedisConnection(deps.redisUrl, "producer");
  const workerConnection = createRedisConnection(deps.redisUrl, "worker");
  const checks = createProducer(checkQueue, { connection: producerConnection, prefix: config.QUEUE_PREFIX });
  const scrapes = createProducer(scrapeQueue, { connection: producerConnection, prefix: config.QUEUE_PREFIX });
  const globalConfig = createGlobalConfigStore({ prisma: deps.db.prisma, redis: commands, subscriber, prefix, logger });
  const guard = deps.guard ?? new OutboundGuard({ allowPrivateNetworkTargets: config.ALLOW_PRIVATE_NETWORK_TARGETS });
  const userAgent = scraperUserAgent(deps.buildVersion ?? "dev", config.SCRAPER_PROJECT_URL);
  // Scraped proxies get the GeoLite databases once an admin's key has downloaded them, as uploads do (docs/geo.md).
  const geo = createStoredGeoResolver(deps.db.pool);
  const geoReloader = createGeoLiteReloader({ resolver: geo, subscriber, prefix, logger: logger.child({ component: "geo" }) });
  const fetches = deps.metrics.counter("svc_scrape_fetches_total", "Source URL fetches by outcome (ok, not_modified, robots_disallowed, blocked, error)", ["status"]);
  const fetchDuration = deps.metrics.histogram("svc_scrape_fetch_duration_seconds", "Time to fetch one source URL, robots.txt included", [], [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]);
  const queueWaiting = deps.metrics.gauge("svc_scrape_queue_waiting", "scrape-url jobs waiting in the queue, as the last tick saw them");
  let consumer: Consumer | null = null;
  let robots: RobotsCache | null = null;
  let robotsTimeoutMs = 0;

  /** One robots cache per fetch timeout: a changed timeout takes a new cache. */
  const robotsFor = (timeoutMs: number): RobotsCache => {
    if (robots === null || robotsTimeoutMs !== timeoutMs) {
      robots = new RobotsCache({ guard, userAgent, timeoutMs });
      robotsTimeoutMs = timeoutMs;
    }
    return robots;
  };
  const scrapeDeps = async (): Promise<ScrapeDeps> => {
    const settings = settingsOf(globalConfig.current());
    return {
      pool: deps.db.pool,
      geo: await geo.get(),
      checks,
      logger,
      allowPrivateTargets: config.ALLOW_PRIVATE_NETWORK_TARGETS,
      guard,
      robots: robotsFor(settings.timeoutMs),
      userAgent,
      settings: () => settingsOf(globalConfig.current()),
      observe: (status, seconds) => {
        fetches.inc({ status });
        fetchDuration.observe({}, seconds);
      },
    };
  };

  return {
    async start() {
      await globalConfig.start();
      await geoReloader.start();
      await geo.get();
      consumer = createConsumer(
        scrapeQueue,
        {
          "scrape-tick": async () => {
            const result = await runScrapeTick({ pool: deps.db.pool, scrapes, logger }, { maxQueuedJobs: config.SCRAPER_MAX_QUEUED_JOBS, leaseMs: config.SCRAPER_LEASE_SECONDS * 1000 });
            queueWaiting.set(result.waiting + result.queued);
            return result;
          },
          "scrape-url": async ({ fetchId, leasedUntil }) => runScrapeUrl(await scrapeDeps(), fetchId, leasedUntil),
          "scrape-source": async ({ userId, sourceId }) => ({ outcome: await runScrapeSource({ ...(await scrapeDeps()), scrapes }, userId, sourceId) }),
        },
        {
          connection: workerConnection,
          prefix: config.QUEUE_PREFIX,
          concurrency: config.SCRAPER_CONCURRENCY,
          onError: (error, job) => logger.error("scrape job failed", { error, job: job?.name }),
        },
      );
      await consumer.worker.waitUntilReady();
      // The scheduler's id is its job name: however many scrapers register it, one tick runs at a time.
      await scrapes.schedule("scrape-tick", SCRAPE_TICK_SECONDS, {});
      logger.info("scraper started", { concurrency: config.SCRAPER_CONCURRENCY, userAgent });
    },
    async stop() {
      await consumer?.close();
      await scrapes.close();
      await checks.close();
      await geoReloader.stop().catch(() => undefined);
      await globalConfig.stop().catch(() => undefined);
      for (const connection of [commands, subscriber, producerConnection, workerConnection]) connection.disconnect();
    },
  };
}
