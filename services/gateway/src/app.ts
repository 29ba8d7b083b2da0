import cors from "cors";
import type { RequestListener } from "node:http";
import express, { Router } from "express";
import helmet from "helmet";
import type { GatewayDeps } from "./gateway.deps.js";
import { requireAdmin, requireAuth } from "./http/auth.middleware.js";
import { trustProxyPredicate } from "./http/client-ip.js";
import { errorHandler, notFoundHandler } from "./http/error-handler.js";
import type { Guards } from "./http/guards.js";
import { requireJsonOrMultipart } from "./http/content-type.middleware.js";
import { parseBodyAfterToken } from "./http/body-after-token.js";
import { jsonBodyParser } from "./http/json-body.middleware.js";
import { httpMetrics } from "./http/metrics.middleware.js";
import { rejectNulInUrl } from "./http/nul-guard.js";
import { requestId } from "./http/request-id.middleware.js";
import { HELMET_OPTIONS } from "./http/security-headers.js";
import { accountRouter } from "./routes/accounts/account.router.js";
import { passwordRecoveryRouter } from "./routes/password-recovery/password-recovery.router.js";
import { userSettingsRouter } from "./routes/user-settings/user-settings.router.js";
import { createProxiesModule } from "./routes/proxies/proxies.module.js";
import { dashboardRouter } from "./routes/dashboard/dashboard.router.js";
import { graphqlRouter } from "./routes/graphql/graphql.router.js";
import { globalSettingsRouter } from "./routes/global-settings/global-settings.router.js";
import { observabilityRouter } from "./routes/observability/observability.router.js";
import { releasesRouter } from "./routes/releases/releases.router.js";
import { rotatingProxiesRouter } from "./routes/rotating-proxies/rotating-proxies.router.js";
import { scrapingSourcesRouter } from "./routes/scraping-sources/scraping-sources.router.js";

export interface GatewayApp {
  /** The Express pipeline alone. */
  app: express.Express;
  /** What the HTTP server runs: the list page's fast path in front of `app`. */
  handler: RequestListener;
}

/** The gateway's HTTP side, composed here only: middleware order matters and is fixed here. */
export function createApp(deps: GatewayDeps): GatewayApp {
  const app = express();
  app.disable("x-powered-by");
  // Bodies are per-user JSON behind bearer auth: an ETag (a hash of every
  // body) buys no cache hits and costs CPU on each list page.
  app.set("etag", false);
  // Only hops inside TRUSTED_PROXY_CIDRS may set X-Forwarded-For (req.ip).
  app.set("trust proxy", trustProxyPredicate(deps.config.TRUSTED_PROXY_CIDRS));

  app.use(requestId);
  app.use(httpMetrics(deps.metrics));
  app.use(helmet(HELMET_OPTIONS));
  const allowedOrigins = new Set(deps.config.CORS_ALLOWED_ORIGINS);
  app.use(
    cors({
      origin: (origin, callback) => callback(null, origin !== undefined && allowedOrigins.has(origin)),
      exposedHeaders: ["X-Request-ID", "Retry-After"],
      maxAge: 600,
    }),
  );

  app.use(observabilityRouter(deps));

  const auth = requireAuth(deps);
  const guards: Guards = { auth, admin: [auth, requireAdmin] };
  const proxies = createProxiesModule(deps, guards);

  // Before the /api JSON parser: GraphQL parses its own body (413 rule).
  app.use("/api", graphqlRouter(deps, guards, proxies.pages));
  const api = Router();
  api.use(requireJsonOrMultipart);
  // Before any route's auth guard (routers attach guards per route, and some
  // routes are anonymous), so the parser refuses compressed bodies and checks
  // for NUL on the raw text: what it costs an anonymous client is bounded by
  // the bytes that client sends.
  // Authenticated routes' bodies are parsed only after their token checks out.
  api.use(parseBodyAfterToken(jsonBodyParser(deps.config.API_JSON_MAX_BODY_BYTES), deps.tokens));
  api.use(rejectNulInUrl);
  api.use(accountRouter(deps, guards));
  api.use(passwordRecoveryRouter(deps));
  api.use(userSettingsRouter(deps, guards));
  api.use(proxies.router);
  api.use(scrapingSourcesRouter(deps, guards));
  api.use(dashboardRouter(deps, guards));
  api.use(releasesRouter(deps));
  api.use(globalSettingsRouter(deps, guards));
  api.use(rotatingProxiesRouter(deps, guards));
  app.use("/api", api);

  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return { app, handler: proxies.withFastPath(app) };
}
