import type { RequestListener } from "node:http";
import type { Router } from "express";
import { createPageStatements, type PageStatements } from "../../db-limits/page-statements.js";
import type { GatewayDeps } from "../../gateway.deps.js";
import type { Guards } from "../../http/guards.js";
import { proxiesRouter } from "./proxies.router.js";
import { withProxyPageFastPath } from "./proxy-page.fast-path.js";

/** What app.ts composes from the proxy inventory's HTTP side. */
export interface ProxiesModule {
  router: Router;
  /** The list pages' statements (API_PAGE_QUERY_CONCURRENCY), shared by REST, the fast path and GraphQL. */
  pages: PageStatements;
  /** `app` with the list page's fast path in front of it. */
  withFastPath(app: RequestListener): RequestListener;
}

export function createProxiesModule(deps: GatewayDeps, guards: Guards): ProxiesModule {
  const pages = createPageStatements(
    deps.db.pool,
    { concurrency: deps.config.API_PAGE_QUERY_CONCURRENCY, maxWaitMs: deps.config.API_PAGE_QUERY_WAIT_MS },
    deps.metrics,
  );
  return {
    router: proxiesRouter(deps, guards, pages),
    pages,
    withFastPath: (app) => withProxyPageFastPath(deps, pages, app),
  };
}
