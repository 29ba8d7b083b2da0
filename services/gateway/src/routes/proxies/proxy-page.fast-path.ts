import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { parse as parseQueryString } from "node:querystring";
import type { GatewayDeps } from "../../gateway.deps.js";
import { bearerTokenOf, isRevokedOnce } from "../../http/auth.middleware.js";
import { containsNul } from "../../http/nul-guard.js";
import { chooseRequestId } from "../../http/request-id.middleware.js";
import { recordSecurityHeaders } from "../../http/security-headers.js";
import { listProxiesJson, parsePage, parsePageSize, parseProxyFilters } from "./proxy-query.service.js";

/** The route template the Express pipeline labels these requests with. */
export const PROXY_PAGE_ROUTE = "/api/getProxyPage/:page";

const PREFIX = "/api/getProxyPage/";

/**
 * `GET /api/getProxyPage/{page}`, the most frequent request, answered
 * without the Express pipeline when it is the plain successful case.
 *
 * Why: at 16 concurrent clients on a 2-core machine, Express's routing and
 * the middleware chain cost about as much CPU as the page itself, and the
 * gateway's single event loop is the bottleneck (docs/benchmarks.md).
 *
 * How it stays the same API: only a request that would certainly succeed is
 * answered here: GET, no body, no `Origin` header (CORS stays with the cors
 * middleware), the canonical path with a page of digits, a valid unrevoked
 * bearer token, query parameters the parsers accept, no NUL anywhere.
 * Everything else, and any error on the way (a 503 from the revocation
 * store, a database failure), is handed to the Express app untouched, which
 * then answers exactly as before, errors included. The response carries the
 * headers the pipeline would set (request id, helmet's recorded headers,
 * content type) and is counted in the same metrics with the same labels;
 * `proxy-page.fast-path.int.test.ts` compares the two responses.
 */
export function withProxyPageFastPath(deps: Pick<GatewayDeps, "tokens" | "revocation" | "pageDb" | "metrics">, app: RequestListener): RequestListener {
  // Header names and values as writeHead takes them flat; only the request id and the length change per response.
  const fixedHeaders = [...recordSecurityHeaders(), ["Content-Type", "application/json; charset=utf-8"] as const].flat();

  async function answer(req: IncomingMessage, res: ServerResponse, url: string): Promise<boolean> {
    const started = process.hrtime.bigint();
    const queryAt = url.indexOf("?");
    const rawPage = url.slice(PREFIX.length, queryAt === -1 ? undefined : queryAt);
    const rawQuery = queryAt === -1 ? "" : url.slice(queryAt + 1);
    const raw = bearerTokenOf(req.headers.authorization);
    if (!raw) return false;
    let userId: number;
    let page: number;
    let pageSize: number;
    let filters: ReturnType<typeof parseProxyFilters>;
    try {
      const token = deps.tokens.verify(raw);
      const query = parseQueryString(rawQuery);
      // A NUL anywhere is the pipeline's 400 (rejectNulInUrl); a page that is not digits, parsePage's.
      if (containsNul(query)) return false;
      page = parsePage(rawPage);
      pageSize = parsePageSize(query.pageSize);
      filters = parseProxyFilters(query);
      if (await isRevokedOnce(deps.revocation, req, token)) return false;
      userId = token.user_id;
    } catch {
      return false;
    }
    const body = await listProxiesJson(deps.pageDb.forRequest(req, res, userId), userId, filters, page, pageSize);
    const headers = ["X-Request-ID", chooseRequestId(singleHeader(req.headers["x-request-id"])), ...fixedHeaders, "Content-Length", String(body.length)];
    res.on("finish", () => {
      const labels = { method: "GET", route: PROXY_PAGE_ROUTE, status: String(res.statusCode) };
      deps.metrics.httpRequestsTotal.inc(labels);
      deps.metrics.httpRequestDurationSeconds.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    res.writeHead(200, headers);
    res.end(body);
    return true;
  }

  return (req, res) => {
    const url = req.url ?? "";
    const candidate =
      req.method === "GET" &&
      url.startsWith(PREFIX) &&
      req.headers.origin === undefined &&
      req.headers["transfer-encoding"] === undefined &&
      (req.headers["content-length"] === undefined || req.headers["content-length"] === "0");
    if (!candidate) {
      app(req, res);
      return;
    }
    answer(req, res, url).then(
      (answered) => {
        if (!answered) app(req, res);
      },
      () => {
        // The pipeline runs it again and answers the failure its usual way (a wait in line that timed out: 503 at
        // once, page-statements.ts). A client that has gone is owed nothing.
        if (!res.headersSent && !res.destroyed) app(req, res);
      },
    );
  };
}

function singleHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(", ") : value;
}
