import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { parse as parseQueryString } from "node:querystring";
import { listProxiesJson, parsePage, parsePageSize, parseProxyFilters } from "@roost/inventory";
import type { PageStatements } from "../../db-limits/page-statements.js";
import type { GatewayDeps } from "../../gateway.deps.js";
import { bearerTokenOf, isRevokedOnce } from "../../http/auth.middleware.js";
import { errorResponse } from "../../http/error-handler.js";
import { containsNul } from "../../http/nul-guard.js";
import { chooseRequestId } from "../../http/request-id.middleware.js";
import { recordSecurityHeaders } from "../../http/security-headers.js";

/** The route template the Express pipeline labels these requests with. */
export const PROXY_PAGE_ROUTE = "/api/getProxyPage/:page";

const PREFIX = "/api/getProxyPage/";

/**
 * `GET /api/getProxyPage/{page}`, the most frequent request, answered
 * without Express's routing and middleware chain, which cost about as much
 * CPU as the page itself. Only a request that passes every check the
 * pipeline makes (GET, no body, no Origin, digits for the page, a valid
 * unrevoked token, parseable query, no NUL) is answered here; anything else
 * goes to `app` untouched. A failure while reading the page is answered here
 * as the pipeline's error handler would (errorResponse), with the same
 * headers and metrics; `proxy-page.fast-path.int.test.ts` compares both.
 */
export function withProxyPageFastPath(
  deps: Pick<GatewayDeps, "tokens" | "revocation" | "metrics" | "logger">,
  pages: PageStatements,
  app: RequestListener,
): RequestListener {
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
    const requestId = chooseRequestId(singleHeader(req.headers["x-request-id"]));
    let status = 200;
    let body: Buffer;
    let errorHeaders: string[] = [];
    try {
      body = await listProxiesJson(pages.forRequest(req, res, userId), userId, filters, page, pageSize);
    } catch (error) {
      const response = errorResponse(error, deps.logger, { method: "GET", route: PROXY_PAGE_ROUTE, requestId });
      if (!response) return true;
      status = response.status;
      body = Buffer.from(JSON.stringify(response.body), "utf8");
      errorHeaders = Object.entries(response.headers).flat();
    }
    const headers = ["X-Request-ID", requestId, ...fixedHeaders, ...errorHeaders, "Content-Length", String(body.length)];
    res.on("finish", () => {
      const labels = { method: "GET", route: PROXY_PAGE_ROUTE, status: String(res.statusCode) };
      deps.metrics.httpRequestsTotal.inc(labels);
      deps.metrics.httpRequestDurationSeconds.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    res.writeHead(status, headers);
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
      (error: unknown) => {
        // Only writing the answer can throw here (a socket gone mid-write): nothing left to answer.
        deps.logger.warn("proxy page fast path failed", { error });
        if (!res.destroyed) res.destroy();
      },
    );
  };
}

function singleHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(", ") : value;
}
