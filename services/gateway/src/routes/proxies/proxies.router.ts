import { performance } from "node:perf_hooks";
import { Router, type Request } from "express";
import { createUnknownGeoDatabase, type GeoDatabase } from "@roost/geo";
import type { GatewayDeps } from "../../gateway.deps.js";
import { authOf } from "../../http/auth.middleware.js";
import type { Guards } from "../../http/guards.js";
import { badRequest, HttpError, notFound, unauthorized } from "../../http/http-error.js";
import { zodMessage } from "../../http/validation.js";
import { exportSlotsFor } from "./export-slots.js";
import { deleteFiltersOf, deleteMessage, deleteProxies } from "./proxy-delete.service.js";
import { parseOutputFormat } from "./proxy-export-format.js";
import { streamExport } from "./proxy-export.service.js";
import { filtersFromBulkRequest, parseProxyFilters, ProxyFilterError } from "./proxy-filter.js";
import {
  countProxies,
  getProxyDetail,
  getStatisticDetail,
  listFilterValues,
  listProxiesJson,
  listStatistics,
  parsePage,
  parsePageSize,
  parseStatisticsLimit,
} from "./proxy-query.service.js";
import { exportRequestSchema } from "./proxy.schema.js";
import { MalformedUploadError, readMultipartUpload, UPLOAD_TEXT_FIELDS, UploadTooLargeError } from "./proxy-upload.multipart.js";
import { AccountGoneError, compactCountersAfterUpload, enqueueFirstChecks, ProxyUploadSession } from "./proxy-upload.service.js";

const MAX_PROXY_ID = 2_147_483_647;
const MAX_STATISTIC_ID = 9_223_372_036_854_775_807n;

function proxyIdOf(raw: unknown): number {
  if (typeof raw !== "string" || !/^\d{1,10}$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_PROXY_ID) {
    throw badRequest("Proxy id must be a positive integer");
  }
  return Number(raw);
}

function statisticIdOf(raw: unknown): string {
  if (typeof raw !== "string" || !/^\d{1,19}$/.test(raw) || BigInt(raw) < 1n || BigInt(raw) > MAX_STATISTIC_ID) {
    throw badRequest("Statistic id must be a positive integer");
  }
  return BigInt(raw).toString();
}

/** ProxyFilterError (a client's mistake) becomes a 400; everything else passes on. */
async function asBadRequest<T>(work: () => T | Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ProxyFilterError) throw badRequest(error.message);
    throw error;
  }
}

/**
 * The proxy inventory (contract "Proxies" and POST /api/user/export):
 * upload, list, filters, detail, statistics, delete, export.
 */
export function proxiesRouter(deps: GatewayDeps, { auth }: Guards): Router {
  const router = Router();
  const db = deps.db;
  const log = deps.logger.child({ component: "proxies" });
  const exportSlots = exportSlotsFor(db.pool.options.max ?? 10);

  const geoDatabase = async (): Promise<GeoDatabase> => {
    try {
      return await deps.geo.get();
    } catch (error) {
      log.error("geo databases unavailable; new proxies get country N/A and type unknown", { error });
      return createUnknownGeoDatabase();
    }
  };

  router.post("/addProxies", auth, async (req, res) => {
    const startedAt = performance.now();
    const { userId, role } = authOf(req);
    const maxBytes = deps.config.API_UPLOAD_MAX_BODY_BYTES;
    const declared = Number(req.get("Content-Length"));
    if (Number.isFinite(declared) && declared > maxBytes) {
      req.resume();
      throw new HttpError(413, `Upload too large: at most ${maxBytes} bytes`);
    }
    const limits = deps.globalConfig.current().proxy_limits;
    const maxProxies = limits.enabled && !(limits.exclude_admins && role === "admin") ? limits.max_per_user : null;

    // Opened on the first byte of input: a request without input holds no connection.
    const upload: { session: ProxyUploadSession | null; inputs: number } = { session: null, inputs: 0 };
    const open = async (): Promise<ProxyUploadSession> => {
      upload.session ??= await ProxyUploadSession.open({
        pool: db.pool,
        geo: await geoDatabase(),
        userId,
        allowPrivateTargets: deps.config.ALLOW_PRIVATE_NETWORK_TARGETS,
        maxProxies,
        startedAt,
      });
      return upload.session;
    };
    try {
      if (req.is("multipart/form-data")) {
        await readMultipartUpload(req, maxBytes, {
          async file(stream) {
            let started = false;
            for await (const chunk of stream as AsyncIterable<Buffer>) {
              if (chunk.length === 0) continue;
              if (!started) upload.inputs++;
              started = true;
              await (await open()).write(chunk);
            }
            if (started) (await open()).endPart();
          },
          async text(value) {
            if (value === "") return;
            upload.inputs++;
            await (await open()).writeText(value);
          },
        });
      } else if (req.is("application/json") && typeof req.body === "object" && req.body !== null && !Array.isArray(req.body)) {
        const body: Record<string, unknown> = req.body;
        for (const field of UPLOAD_TEXT_FIELDS) {
          const value = body[field];
          if (typeof value !== "string" || value === "") continue;
          upload.inputs++;
          await (await open()).writeText(value);
        }
      } else {
        throw badRequest("Expected multipart/form-data with file, proxyTextarea or clipboardProxies");
      }
      const current = upload.session;
      if (current === null || upload.inputs === 0) throw badRequest("No proxies submitted: send file, proxyTextarea or clipboardProxies");
      // Whitespace and comments only is no input either (the session holds nothing to store; the catch rolls it back).
      if (current.submittedCount === 0) throw badRequest("No proxies submitted: every line was empty or a comment");
      const outcome = await current.commit();
      // Redis and PostgreSQL at once: neither fails the request (each logs its failure).
      await Promise.all([enqueueFirstChecks(deps.queues, log, userId, outcome.newProxyIds), compactCountersAfterUpload(db.pool, log, userId)]);
      log.info("proxies uploaded", { userId, ...outcome.details, proxyCount: outcome.proxyCount, created: outcome.newProxyIds.length });
      res.json({ proxyCount: outcome.proxyCount, details: outcome.details });
    } catch (error) {
      await upload.session?.abort();
      if (error instanceof UploadTooLargeError) throw new HttpError(413, `Upload too large: at most ${maxBytes} bytes`);
      if (error instanceof MalformedUploadError) throw badRequest(error.message);
      if (error instanceof AccountGoneError) throw unauthorized("Invalid token");
      throw error;
    }
  });

  router.get("/getProxyCount", auth, async (req, res) => {
    res.json(await countProxies(db, authOf(req).userId));
  });

  router.get("/getProxyPage/:page", auth, async (req, res) => {
    const { page, pageSize, filters } = await asBadRequest(() => ({
      page: parsePage(req.params.page),
      pageSize: parsePageSize(req.query.pageSize),
      filters: parseProxyFilters(req.query),
    }));
    // The page as JSON bytes, built without intermediate objects: the body res.json(listProxies(...)) would send,
    // with the same Content-Type (send() adds the charset only to a string body).
    res.set("Content-Type", "application/json; charset=utf-8").send(await listProxiesJson(db, authOf(req).userId, filters, page, pageSize));
  });

  router.get("/proxyFilters", auth, async (req, res) => {
    res.json(await listFilterValues(db, authOf(req).userId));
  });

  router.get("/proxies/:id", auth, async (req, res) => {
    const detail = await getProxyDetail(db, authOf(req).userId, proxyIdOf(req.params.id));
    if (!detail) throw notFound("Proxy not found");
    res.setHeader("Cache-Control", "no-store");
    res.json(detail);
  });

  router.get("/proxies/:id/statistics", auth, async (req, res) => {
    const proxyId = proxyIdOf(req.params.id);
    const limit = await asBadRequest(() => parseStatisticsLimit(req.query.limit));
    const statistics = await listStatistics(db, authOf(req).userId, proxyId, limit);
    if (!statistics) throw notFound("Proxy not found");
    res.json({ statistics });
  });

  router.get("/proxies/:id/statistics/:statisticId", auth, async (req, res) => {
    const statistic = await getStatisticDetail(db, authOf(req).userId, proxyIdOf(req.params.id), statisticIdOf(req.params.statisticId));
    if (!statistic) throw notFound("Statistic not found");
    res.json(statistic);
  });

  router.delete("/proxies", auth, async (req, res) => {
    const filters = await asBadRequest(() => deleteFiltersOf(requestBody(req)));
    const deleted = await deleteProxies(db.pool, authOf(req).userId, filters);
    res.json(deleteMessage(deleted));
  });

  router.post("/user/export", auth, async (req, res) => {
    const body = requestBody(req) ?? {};
    if (typeof body !== "object" || Array.isArray(body)) throw badRequest("Expected an export request object");
    const parsed = exportRequestSchema.safeParse(body);
    if (!parsed.success) throw badRequest(zodMessage(parsed.error));
    const { userId } = authOf(req);
    const filters = filtersFromBulkRequest(parsed.data, { ids: true });
    const format = parseOutputFormat(parsed.data.outputFormat);
    const slot = exportSlots.take(userId);
    if ("refused" in slot) {
      res.setHeader("Retry-After", "5");
      throw new HttpError(
        429,
        slot.refused === "user"
          ? `Too many exports in progress: at most ${exportSlots.perUser} at a time per user; try again when one finishes`
          : "Too many exports in progress; try again shortly",
      );
    }
    // A client that reads nothing for this long is cut off (no 'timeout' listener: Node destroys
    // the socket), which ends the COPY and frees its connection and its slot.
    res.setTimeout(deps.config.API_EXPORT_STALL_SECONDS * 1000);
    try {
      await streamExport(db.pool, userId, filters, format, {
        stream: res,
        begin: () => {
          res.status(200);
          res.setHeader("Content-Type", "text/plain; charset=utf-8");
          res.setHeader("Cache-Control", "no-store");
        },
      });
    } catch (error) {
      if (!res.headersSent) throw error;
      log.error("export failed mid-stream", { userId, error });
      res.destroy();
      return;
    } finally {
      slot.release();
    }
    res.end();
  });

  return router;
}

/** The JSON body, or undefined when none was sent. */
function requestBody(req: Request): unknown {
  const body: unknown = req.body;
  return body;
}
