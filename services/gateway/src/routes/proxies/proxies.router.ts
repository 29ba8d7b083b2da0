import { performance } from "node:perf_hooks";
import { Router, type Request, type Response } from "express";
import { createUnknownGeoDatabase, type GeoDatabase } from "@roost/geo";
import { rotatorKeys } from "@roost/rotation";
import {
  AccountGoneError,
  afterIngest,
  countProxies,
  deleteProxies,
  filtersFromBulkRequest,
  getProxyDetail,
  getStatisticDetail,
  listFilterValues,
  listProxiesJson,
  listStatistics,
  parseOutputFormat,
  parsePage,
  parsePageSize,
  parseProxyFilters,
  parseStatisticsLimit,
  ProxyFilterError,
  ProxyUploadSession,
  streamExport,
} from "@roost/inventory";
import { connectionSlotsFor, SlotsBusyError, type Slot } from "../../db-limits/connection-slots.js";
import type { PageStatements } from "../../db-limits/page-statements.js";
import type { GatewayDeps } from "../../gateway.deps.js";
import { authOf } from "../../http/auth.middleware.js";
import type { Guards } from "../../http/guards.js";
import { badRequest, HttpError, notFound, unauthorized } from "../../http/http-error.js";
import { zodMessage } from "../../http/validation.js";
import { MalformedUploadError, readMultipartUpload, UPLOAD_TEXT_FIELDS, UploadTooLargeError } from "./proxy-upload.multipart.js";
import { deleteFiltersOf, exportRequestSchema } from "./proxy.schema.js";

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
export function proxiesRouter(deps: GatewayDeps, { auth }: Guards, pages: PageStatements): Router {
  const router = Router();
  const db = deps.db;
  const log = deps.logger.child({ component: "proxies" });
  const slotGauge = deps.metrics.gauge("svc_connection_slots", "Uploads and exports holding a database connection (held) or waiting for one (waiting), by kind", [
    "kind",
    "state",
  ]);
  const slots = connectionSlotsFor(db.pool.options.max ?? 10, ({ held, waiting }) => {
    for (const kind of ["upload", "export", "extra"] as const) slotGauge.set({ kind, state: "held" }, held[kind]);
    slotGauge.set({ kind: "upload", state: "waiting" }, waiting);
  });
  const stallMs = deps.config.API_STREAM_STALL_SECONDS * 1000;
  const queueMs = deps.config.API_UPLOAD_QUEUE_SECONDS * 1000;

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

    const multipart = Boolean(req.is("multipart/form-data"));
    const json = !multipart && req.is("application/json") && typeof req.body === "object" && req.body !== null && !Array.isArray(req.body);
    if (!multipart && !json) throw badRequest("Expected multipart/form-data with file, proxyTextarea or clipboardProxies");

    // The session (its connection) is opened on the first byte of input: a request without input
    // holds none.
    const upload: { opening: Promise<ProxyUploadSession> | null; slot: Slot | null; inputs: number } = { opening: null, slot: null, inputs: 0 };
    const open = (): Promise<ProxyUploadSession> =>
      (upload.opening ??= (async () =>
        ProxyUploadSession.open({
          pool: db.pool,
          geo: await geoDatabase(),
          userId,
          allowPrivateTargets: deps.config.ALLOW_PRIVATE_NETWORK_TARGETS,
          maxProxies,
          startedAt,
          extraSlot: () => slots.takeExtra(),
        }))());
    const opened = async (): Promise<ProxyUploadSession | null> => (upload.opening ? upload.opening.catch(() => null) : null);
    // The upload's slot (ConnectionSlots) before its body is read: one waiting in line holds no connection
    // and a multipart one buffers nothing. It leaves the line if the client goes away or after
    // API_UPLOAD_QUEUE_SECONDS, while the server's request timeout still leaves its body time to arrive.
    const gone = new AbortController();
    const interrupted = (): void => gone.abort(new MalformedUploadError("Upload interrupted"));
    res.once("close", interrupted);
    // A client that went away while the auth guard waited closed the response before the listener
    // was there: without this, the slot would be taken for a request that never ends. (Not
    // req.destroyed: a JSON body's stream is destroyed once the parser has read it.)
    if (res.destroyed) interrupted();
    try {
      upload.slot = await slots.wait(userId, gone.signal, queueMs);
      if (multipart) {
        // While the body is read, a client that sends nothing for this long is cut off (no 'timeout'
        // listener: Node destroys the socket), which rolls the upload back. Once it is all in, the
        // server's own work (a lock another gateway's upload holds, the commit) is not the client's stall.
        req.setTimeout(stallMs);
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
        req.setTimeout(0);
      } else {
        const body = req.body as Record<string, unknown>;
        for (const field of UPLOAD_TEXT_FIELDS) {
          const value = body[field];
          if (typeof value !== "string" || value === "") continue;
          upload.inputs++;
          await (await open()).writeText(value);
        }
      }
      const current = await opened();
      if (current === null || upload.inputs === 0) throw badRequest("No proxies submitted: send file, proxyTextarea or clipboardProxies");
      // Whitespace and comments only is no input either (the session holds nothing to store; the catch rolls it back).
      if (current.submittedCount === 0) throw badRequest("No proxies submitted: every line was empty or a comment");
      const outcome = await current.commit();
      // The connection is back in the pool: the next upload in line may go while this one answers.
      upload.slot?.release();
      // Redis and PostgreSQL at once: neither fails the request (each logs its failure).
      const onHandOffFailure = (): void => deps.metrics.queueHandoffFailuresTotal.inc({ queue: "check" });
      await afterIngest({ pool: db.pool, checks: deps.queues.check, logger: log, onHandOffFailure }, userId, outcome);
      log.info("proxies uploaded", { userId, ...outcome.details, proxyCount: outcome.proxyCount, created: outcome.newProxyIds.length });
      res.json({ proxyCount: outcome.proxyCount, details: outcome.details });
    } catch (error) {
      gone.abort(error);
      await (await opened())?.abort();
      if (error instanceof UploadTooLargeError) throw new HttpError(413, `Upload too large: at most ${maxBytes} bytes`);
      if (error instanceof MalformedUploadError) throw badRequest(error.message);
      if (error instanceof AccountGoneError) throw unauthorized("Invalid token");
      if (error instanceof SlotsBusyError) {
        // Nothing of the body was read: discard it, so the answer can go out.
        req.resume();
        throw busy(res, "uploads", error, slots.limits.perUser.upload + slots.limits.waiting.perUser);
      }
      throw error;
    } finally {
      upload.slot?.release();
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
    // The page as JSON bytes, with res.json's Content-Type (send() adds the charset only to a string body).
    // Through the page statements, as on the fast path: at most API_PAGE_QUERY_CONCURRENCY at once.
    const { userId } = authOf(req);
    const body = await listProxiesJson(pages.forRequest(req, res, userId), userId, filters, page, pageSize);
    res.set("Content-Type", "application/json; charset=utf-8").send(body);
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
    const { userId } = authOf(req);
    const deleted = await deleteProxies(db.pool, userId, filters, { longStatementTimeoutMs: deps.config.DATABASE_LONG_STATEMENT_TIMEOUT_MS });
    // Rotators refresh this user's pools now rather than at their next periodic reload.
    if (deleted > 0) await deps.redis.publish(rotatorKeys(deps.config.QUEUE_PREFIX).checkedChannel, JSON.stringify({ userId, proxyIds: [], removedIds: [] })).catch(() => undefined);
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
    let slot: Slot;
    try {
      slot = slots.take(userId, "export");
    } catch (error) {
      if (error instanceof SlotsBusyError) throw busy(res, "exports", error, slots.limits.perUser.export);
      throw error;
    }
    // A client that reads nothing for this long is cut off (no 'timeout' listener: Node destroys
    // the socket), which ends the COPY and frees its connection and its slot.
    res.setTimeout(stallMs);
    try {
      await streamExport(db.pool, userId, filters, format, {
        stream: res,
        begin: () => {
          res.status(200);
          res.setHeader("Content-Type", "text/plain; charset=utf-8");
          res.setHeader("Cache-Control", "no-store");
        },
      }, { longStatementTimeoutMs: deps.config.DATABASE_LONG_STATEMENT_TIMEOUT_MS });
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

/** The 429 for an upload or export that found no slot (ConnectionSlots). */
function busy(res: Response, what: "uploads" | "exports", error: SlotsBusyError, perUser: number): HttpError {
  res.setHeader("Retry-After", "5");
  return new HttpError(
    429,
    error.refused === "user"
      ? `Too many ${what} in progress: at most ${perUser} at a time per user; try again when one finishes`
      : error.refused === "waited"
        ? `Too many ${what} in progress: this one waited its longest for a turn; try again shortly`
        : `Too many ${what} in progress; try again shortly`,
  );
}

/** The contract's JSON string answer. */
function deleteMessage(deleted: number): string {
  return deleted > 0 ? `Deleted ${deleted} proxies.` : "No proxies matched the delete criteria.";
}

/** The JSON body, or undefined when none was sent. */
function requestBody(req: Request): unknown {
  const body: unknown = req.body;
  return body;
}
