import { Router, type Request } from "express";
import { listProxiesJson, parsePage, parsePageSize, parseProxyFilters, ProxyFilterError } from "@roost/inventory";
import { OutboundGuard } from "@roost/net";
import { isBlockedUrl } from "@roost/global-config";
import { RobotsCache, scraperUserAgent } from "@roost/scraping";
import type { GatewayDeps } from "../../gateway.deps.js";
import { authOf } from "../../http/auth.middleware.js";
import type { Guards } from "../../http/guards.js";
import { badRequest, HttpError, notFound } from "../../http/http-error.js";
import { MalformedUploadError, readMultipartUpload, UploadTooLargeError } from "../proxies/proxy-upload.multipart.js";
import { countSources, deleteSourcesById, selectSourceDetail, selectSourcePage, sourceIsUsers } from "./scraping-sources.repository.js";
import { deleteSourcesSchema, parseSourceLines, searchOf, SOURCE_TEXT_FIELDS, sourceIdOf, sourcePageSizeOf } from "./scraping-sources.schema.js";
import { addSources } from "./scraping-sources.service.js";

/**
 * Scraping sources (contract "Scraping sources"): add, delete, count, page,
 * detail, a source's proxies, the robots.txt check and the robots policy.
 * Literal paths are registered before `/scrapingSources/:id`.
 */
export function scrapingSourcesRouter(deps: GatewayDeps, { auth }: Guards): Router {
  const router = Router();
  const log = deps.logger.child({ component: "scraping-sources" });
  const guard = new OutboundGuard({ allowPrivateNetworkTargets: deps.config.ALLOW_PRIVATE_NETWORK_TARGETS });
  const userAgent = scraperUserAgent(deps.build.buildVersion, deps.config.SCRAPER_PROJECT_URL);
  let robots: { cache: RobotsCache; timeoutMs: number } | null = null;
  const robotsCache = (): RobotsCache => {
    const timeoutMs = deps.globalConfig.current().scraper.timeout_ms;
    if (robots === null || robots.timeoutMs !== timeoutMs) robots = { cache: new RobotsCache({ guard, userAgent, timeoutMs }), timeoutMs };
    return robots.cache;
  };

  router.post("/scrapingSources", auth, async (req, res) => {
    const { userId } = authOf(req);
    const texts = await submittedTexts(req, deps.config.API_UPLOAD_MAX_BODY_BYTES);
    const result = await addSources(
      { pool: deps.db.pool, guard, scrapes: deps.queues.scrape, logger: log, websiteBlacklist: deps.globalConfig.current().website_blacklist },
      userId,
      texts,
    );
    log.info("scraping sources added", { userId, sourceCount: result.sourceCount });
    res.json(result);
  });

  router.delete("/scrapingSources", auth, async (req, res) => {
    const parsed = deleteSourcesSchema.safeParse(req.body);
    if (!parsed.success) throw badRequest("Expected a JSON array of scraping source ids");
    const deleted = await deleteSourcesById(deps.db.pool, authOf(req).userId, [...new Set(parsed.data)]);
    res.json(`Deleted ${deleted} scraping sources.`);
  });

  router.get("/getScrapingSourcesCount", auth, async (req, res) => {
    res.json(await countSources(deps.db.pool, authOf(req).userId));
  });

  router.get("/getScrapingSourcesPage/:page", auth, async (req, res) => {
    const page = pageOf(req.params.page);
    const pageSize = sourcePageSizeOf(req.query.pageSize);
    if (pageSize === null) throw badRequest("pageSize must be a positive integer");
    const search = searchOf(req.query.search);
    if (search === null) throw badRequest("search must be a string of at most 2048 characters");
    res.json(await selectSourcePage(deps.db.pool, authOf(req).userId, page, pageSize, search));
  });

  router.get("/scrapingSources/check", auth, async (req, res) => {
    const raw = req.query.url;
    if (typeof raw !== "string" || raw === "") throw badRequest("url is required");
    const { urls } = parseSourceLines([raw]);
    const url = urls[0];
    if (url === undefined || urls.length !== 1) throw badRequest("url must be one http(s) URL without credentials");
    if (isBlockedUrl(url, deps.globalConfig.current().website_blacklist)) {
      res.json({ allowed: false, robots_found: false, error: "the website blacklist blocks this URL" });
      return;
    }
    const verdict = await robotsCache().check(url);
    res.json({ allowed: verdict.allowed, robots_found: verdict.robotsFound, error: verdict.error });
  });

  router.get("/scrapingSources/respectRobots", auth, (_req, res) => {
    res.json({ respect_robots_txt: deps.globalConfig.current().scraper.respect_robots_txt });
  });

  router.get("/scrapingSources/:id", auth, async (req, res) => {
    const detail = await selectSourceDetail(deps.db.pool, authOf(req).userId, idOf(req.params.id));
    if (!detail) throw notFound("Scraping source not found");
    res.json(detail);
  });

  router.get("/scrapingSources/:id/proxies", auth, async (req, res) => {
    const { userId } = authOf(req);
    const sourceId = idOf(req.params.id);
    let query: { page: number; pageSize: number; filters: ReturnType<typeof parseProxyFilters> };
    try {
      query = {
        page: req.query.page === undefined ? 1 : parsePage(req.query.page),
        pageSize: parsePageSize(req.query.pageSize),
        filters: parseProxyFilters(req.query),
      };
    } catch (error) {
      if (error instanceof ProxyFilterError) throw badRequest(error.message);
      throw error;
    }
    if (!(await sourceIsUsers(deps.db.pool, userId, sourceId))) throw notFound("Scraping source not found");
    const body = await listProxiesJson(deps.db, userId, { ...query.filters, sourceId }, query.page, query.pageSize);
    res.type("application/json").send(body);
  });

  return router;
}

function idOf(raw: unknown): number {
  const id = sourceIdOf(raw);
  // Not a possible id of anyone's source: the same answer as another user's id.
  if (id === null) throw notFound("Scraping source not found");
  return id;
}

function pageOf(raw: unknown): number {
  if (typeof raw !== "string" || !/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw badRequest("page must be a positive integer");
  return Number(raw);
}

/** The text of `file`, `scrapeSourceTextarea` and `clipboardScrapeSources` (multipart, or the same names in a JSON object). */
async function submittedTexts(req: Request, maxBytes: number): Promise<string[]> {
  const declared = Number(req.get("Content-Length"));
  if (Number.isFinite(declared) && declared > maxBytes) {
    req.resume();
    throw new HttpError(413, `Upload too large: at most ${maxBytes} bytes`);
  }
  if (req.is("multipart/form-data")) {
    const texts: string[] = [];
    try {
      await readMultipartUpload(
        req,
        maxBytes,
        {
          async file(stream) {
            const chunks: Buffer[] = [];
            for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
            texts.push(Buffer.concat(chunks).toString("utf8"));
          },
          async text(value) {
            texts.push(value);
          },
        },
        SOURCE_TEXT_FIELDS,
      );
    } catch (error) {
      if (error instanceof UploadTooLargeError) throw new HttpError(413, `Upload too large: at most ${maxBytes} bytes`);
      if (error instanceof MalformedUploadError) throw badRequest(error.message);
      throw error;
    }
    return texts;
  }
  const body: unknown = req.body;
  if (typeof body === "object" && body !== null && !Array.isArray(body)) {
    const fields = body as Record<string, unknown>;
    return SOURCE_TEXT_FIELDS.map((name) => fields[name]).filter((value): value is string => typeof value === "string");
  }
  throw badRequest("Expected multipart/form-data with file, scrapeSourceTextarea or clipboardScrapeSources");
}
