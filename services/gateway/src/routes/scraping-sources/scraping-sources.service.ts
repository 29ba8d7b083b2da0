import { isBlockedUrl } from "@roost/global-config";
import { OutboundBlockedError, type OutboundGuard } from "@roost/net";
import type { Logger } from "@roost/observability";
import { attachSources, SourcesNotQueuedError, type ScrapeProducer } from "@roost/scraping";
import type pg from "pg";
import { badRequest, unavailable } from "../../http/http-error.js";
import { MAX_SOURCES_PER_REQUEST, parseSourceLines } from "./scraping-sources.schema.js";

export interface AddSourcesDeps {
  pool: pg.Pool;
  guard: OutboundGuard;
  scrapes: Pick<ScrapeProducer, "enqueue">;
  logger: Logger;
  websiteBlacklist: readonly string[];
}

/** How long the add-time guard check waits for one name to resolve. */
const RESOLVE_TIMEOUT_MS = 3000;

/**
 * POST /api/scrapingSources: every line must be a safe http(s) URL that the
 * website blacklist allows, or nothing is saved (400 naming them). New sources
 * are attached as at registration (attachSources); when they cannot be
 * queued they are removed again (503).
 */
export async function addSources(deps: AddSourcesDeps, userId: number, texts: readonly string[]): Promise<{ sourceCount: number }> {
  const { urls, unsafe } = parseSourceLines(texts);
  if (urls.length === 0 && unsafe.length === 0) throw badRequest("No scraping sources submitted: send file, scrapeSourceTextarea or clipboardScrapeSources");
  if (urls.length + unsafe.length > MAX_SOURCES_PER_REQUEST) throw badRequest(`At most ${MAX_SOURCES_PER_REQUEST} scraping sources per request`);
  const blocked = urls.filter((url) => isBlockedUrl(url, deps.websiteBlacklist));
  const refused = await refusedByGuard(deps.guard, urls.filter((url) => !blocked.includes(url)));
  const unsafeSources = [...unsafe, ...refused];
  if (blocked.length > 0 || unsafeSources.length > 0) {
    throw badRequest("Some scraping sources were rejected; nothing was saved", {
      blocked_sources: blocked,
      unsafe_sources: unsafeSources,
      websiteBlacklist: [...deps.websiteBlacklist],
    });
  }
  try {
    const added = await attachSources(deps, userId, urls);
    return { sourceCount: added.length };
  } catch (error) {
    if (error instanceof SourcesNotQueuedError) throw unavailable("Scraping sources could not be queued; nothing was saved. Try again later.", 1);
    throw error;
  }
}

/** URLs whose host the outbound guard refuses now (a name that does not resolve yet is left to fetch time). */
async function refusedByGuard(guard: OutboundGuard, urls: readonly string[]): Promise<string[]> {
  const verdicts = new Map<string, Promise<boolean>>();
  const refusedHost = (host: string): Promise<boolean> => {
    let verdict = verdicts.get(host);
    if (!verdict) {
      verdict = withTimeout(guard.resolve(host), RESOLVE_TIMEOUT_MS).then(
        () => false,
        (error: unknown) => error instanceof OutboundBlockedError,
      );
      verdicts.set(host, verdict);
    }
    return verdict;
  };
  const hostOf = (url: string): string => {
    const host = new URL(url).hostname;
    return host.startsWith("[") ? host.slice(1, -1) : host;
  };
  const refused = await Promise.all(urls.map((url) => refusedHost(hostOf(url))));
  return urls.filter((_, index) => refused[index]);
}

function withTimeout<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("timed out")), timeoutMs);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
