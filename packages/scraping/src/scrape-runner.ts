import type { GeoDatabase } from "@roost/geo";
import { AccountGoneError, ingest, UnknownSourceError, type CheckHandOff, type UploadPool } from "@roost/inventory";
import type { OutboundGuard } from "@roost/net";
import type { Logger } from "@roost/observability";
import { SCRAPE_JOB_PRIORITY, SCRAPE_WAKE_JOB_ID, type Producer, type scrapeQueue } from "@roost/queue";
import { fetchSource, type ScrapeStatus } from "./fetch-source.js";
import type { RobotsCache } from "./robots-cache.js";
import {
  adoptUnfetchedSources,
  claimDueFetches,
  deleteUnfollowedFetch,
  deleteUnfollowedFetches,
  ensureFetches,
  makeFetchDue,
  recordFetch,
  recordSourceScrape,
  scheduleNextFetch,
  selectFetch,
  selectFollower,
  selectFollowers,
  type Follower,
} from "./scrape-fetch.repository.js";

/** The global configuration a scrape reads, taken fresh for every job. */
export interface ScrapeSettings {
  intervalSeconds: number;
  timeoutMs: number;
  maxBytes: number;
  respectRobots: boolean;
  websiteBlacklist: readonly string[];
  proxyLimits: { enabled: boolean; max_per_user: number; exclude_admins: boolean };
}

export interface ScrapeDeps {
  pool: UploadPool;
  geo: GeoDatabase;
  checks: CheckHandOff;
  logger: Logger;
  /** ALLOW_PRIVATE_NETWORK_TARGETS: reserved proxy addresses are accepted by ingest. */
  allowPrivateTargets: boolean;
  guard: OutboundGuard;
  robots: RobotsCache;
  userAgent: string;
  settings: () => ScrapeSettings;
  /** Called once per fetch with its outcome and seconds taken (metrics). */
  observe?: (status: ScrapeStatus, seconds: number) => void;
}

export interface ScrapeUrlResult {
  /** `superseded`: the job's claim is no longer the URL's current one (nothing done). */
  status: ScrapeStatus | "unfollowed" | "superseded";
  followers: number;
}

/**
 * One `scrape-url` job: fetches the URL once and gives its proxies to every
 * follower through `ingest` with that follower's source id; every follower's
 * row records the outcome, failures included. A URL nobody follows is dropped.
 * With `leasedUntil` (the claim's lease end) a job whose claim was superseded
 * does nothing: a stalled job of a killed worker that BullMQ runs again after
 * the URL was claimed anew or already fetched, which would fetch it twice.
 */
export async function runScrapeUrl(deps: ScrapeDeps, fetchId: number, leasedUntil?: number): Promise<ScrapeUrlResult> {
  const state = await selectFetch(deps.pool, fetchId);
  if (!state) return { status: "unfollowed", followers: 0 };
  if (leasedUntil !== undefined && state.nextFetchAt.getTime() !== leasedUntil) return { status: "superseded", followers: 0 };
  const followers = await selectFollowers(deps.pool, state.url);
  if (followers.length === 0) {
    await deleteUnfollowedFetch(deps.pool, fetchId);
    return { status: "unfollowed", followers: 0 };
  }
  const settings = deps.settings();
  const startedAt = performance.now();
  const result = await fetchSource(state.url, {
    guard: deps.guard,
    robots: deps.robots,
    userAgent: deps.userAgent,
    timeoutMs: settings.timeoutMs,
    maxBytes: settings.maxBytes,
    respectRobots: settings.respectRobots,
    websiteBlacklist: settings.websiteBlacklist,
    etag: state.etag,
    lastModified: state.lastModified,
  });
  const durationMs = Math.round(performance.now() - startedAt);
  const fetchedAt = new Date();
  deps.observe?.(result.status, durationMs / 1000);
  const error = "error" in result ? result.error : null;
  const lines = result.status === "ok" ? result.lines : result.status === "not_modified" ? linesOf(state.proxyLines) : null;
  await recordFetch(deps.pool, fetchId, {
    status: result.status,
    error,
    durationMs,
    fetchedAt,
    ...(result.status === "ok" && { fresh: { etag: result.etag, lastModified: result.lastModified, proxyLines: result.lines.join("\n") } }),
  });
  if (result.status !== "ok" && result.status !== "not_modified") {
    deps.logger.info("scrape source not fetched", { url: state.url, status: result.status, error });
  }
  const delivery = { status: result.status, error, durationMs, scrapedAt: fetchedAt, lines };
  for (const follower of followers) await deliver(deps, settings, follower, delivery);
  // Followers added while the fetch ran get the same result (their scrape-source job left the URL to this one).
  const served = new Set(followers.map((follower) => follower.sourceId));
  const late = (await selectFollowers(deps.pool, state.url)).filter((follower) => !served.has(follower.sourceId));
  for (const follower of late) await deliver(deps, settings, follower, delivery);
  // Only now: a job that dies before this point leaves the URL leased, and it is claimed again when the lease ends.
  await scheduleNextFetch(deps.pool, fetchId, fetchedAt, settings.intervalSeconds);
  return { status: result.status, followers: followers.length + late.length };
}

interface Delivery {
  status: ScrapeStatus;
  error: string | null;
  durationMs: number;
  scrapedAt: Date;
  /** Lines to ingest, or null when the attempt failed. */
  lines: string[] | null;
}

/** One follower's share of a fetch; a follower deleted meanwhile is skipped, any other failure is recorded on its row. */
async function deliver(deps: ScrapeDeps, settings: ScrapeSettings, follower: Follower, delivery: Delivery): Promise<void> {
  let proxyCount = 0;
  let { status, error } = delivery;
  if (delivery.lines !== null && delivery.lines.length > 0) {
    const limits = settings.proxyLimits;
    const maxProxies = limits.enabled && !(limits.exclude_admins && follower.role === "admin") ? limits.max_per_user : null;
    try {
      const outcome = await ingest(deps, follower.userId, delivery.lines, { sourceId: follower.sourceId, maxProxies, seenAt: delivery.scrapedAt });
      proxyCount = outcome.proxyCount;
    } catch (ingestError) {
      if (ingestError instanceof AccountGoneError || ingestError instanceof UnknownSourceError) return;
      deps.logger.error("scraped proxies not stored", { userId: follower.userId, sourceId: follower.sourceId, error: ingestError });
      status = "error";
      error = "the proxies found could not be stored";
    }
  }
  await recordSourceScrape(deps.pool, follower, {
    status,
    error,
    durationMs: delivery.durationMs,
    scrapedAt: delivery.scrapedAt,
    proxyCount,
    nextScrapeInSec: settings.intervalSeconds,
  });
}

function linesOf(text: string | null): string[] | null {
  if (text === null) return null;
  return text === "" ? [] : text.split("\n");
}

/**
 * A `scrape-source` job (a source just added): the URL's last successful
 * result goes to the new follower at once; a URL never fetched successfully
 * is made due and the scheduler woken, so it is fetched within seconds.
 */
export async function runScrapeSource(deps: ScrapeDeps & { scrapes: ScrapeProducer }, userId: number, sourceId: number): Promise<"handed-off" | "due" | "gone"> {
  const follower = await selectFollower(deps.pool, userId, sourceId);
  if (!follower) return "gone";
  const fetchId = (await ensureFetches(deps.pool, [follower.url])).get(follower.url);
  const state = fetchId === undefined ? null : await selectFetch(deps.pool, fetchId);
  if (!state) return "gone";
  if (state.proxyLines !== null && state.lastFetchedAt !== null) {
    await deliver(deps, deps.settings(), follower, {
      status: "ok",
      error: null,
      durationMs: state.lastDurationMs ?? 0,
      scrapedAt: new Date(),
      lines: linesOf(state.proxyLines),
    });
    return "handed-off";
  }
  await makeFetchDue(deps.pool, state.fetchId);
  await wakeScrapeScheduler(deps.scrapes, deps.logger);
  return "due";
}

export type ScrapeProducer = Pick<Producer<typeof scrapeQueue>, "enqueue" | "queue">;

/** Wakes the scrape scheduler; a failure is logged, the next scheduled tick finds the work. */
export async function wakeScrapeScheduler(scrapes: Pick<ScrapeProducer, "enqueue">, logger: Logger): Promise<void> {
  try {
    await scrapes.enqueue("scrape-tick", {}, { jobId: SCRAPE_WAKE_JOB_ID, removeOnComplete: true, removeOnFail: true });
  } catch (error) {
    logger.warn("scrape scheduler not woken; its next tick will find the due sources", { error });
  }
}

export interface ScrapeSchedulerOptions {
  /** Most scrape-url jobs waiting in Redis at once; default 8. */
  maxQueuedJobs?: number;
  /** Lease of a claimed URL in ms; default 10 minutes (a fetch's own timeout is at most that). */
  leaseMs?: number;
}

/**
 * One scheduler tick: while fewer than `maxQueuedJobs` scrape jobs wait,
 * claims due URLs (fair across users) and enqueues one `scrape-url` per URL
 * with an id naming the claim. A job lost with Redis is claimed again when
 * its lease ends: PostgreSQL, not Redis, holds the schedule. URLs nobody
 * follows lose their fetch state.
 */
export async function runScrapeTick(
  deps: { pool: UploadPool; scrapes: ScrapeProducer; logger: Logger },
  options: ScrapeSchedulerOptions = {},
): Promise<{ queued: number; waiting: number }> {
  const maxQueued = options.maxQueuedJobs ?? 8;
  const leaseMs = options.leaseMs ?? 10 * 60_000;
  await deleteUnfollowedFetches(deps.pool);
  const waiting = await deps.scrapes.queue.getJobCountByTypes("wait", "prioritized", "paused");
  const room = maxQueued - waiting;
  if (room <= 0) return { queued: 0, waiting };
  await adoptUnfetchedSources(deps.pool);
  const claimed = await claimDueFetches(deps.pool, { limit: room, leaseMs });
  const claimedAt = Date.now();
  for (const fetch of claimed) {
    await deps.scrapes.enqueue("scrape-url", { fetchId: fetch.fetchId, leasedUntil: fetch.leasedUntil }, { jobId: `su-${fetch.fetchId}-${claimedAt}`, priority: SCRAPE_JOB_PRIORITY });
  }
  if (claimed.length > 0) deps.logger.debug("scrape jobs queued", { jobs: claimed.length, waiting });
  return { queued: claimed.length, waiting };
}
