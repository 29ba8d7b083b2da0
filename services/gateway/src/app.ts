import cors from "cors";
import express, { Router } from "express";
import helmet from "helmet";
import type { GatewayDeps } from "./gateway.deps.js";
import { requireAdmin, requireAuth } from "./http/auth.middleware.js";
import { trustProxyPredicate } from "./http/client-ip.js";
import { errorHandler, notFoundHandler } from "./http/error-handler.js";
import type { Guards } from "./http/guards.js";
import { httpMetrics } from "./http/metrics.middleware.js";
import { requestId } from "./http/request-id.middleware.js";
import { accountRouter, publicAccountRouter } from "./routes/accounts/account.router.js";
import { userSettingsRouter } from "./routes/user-settings/user-settings.router.js";

/** The gateway's Express app: middleware order matters and is fixed here. */
export function createApp(deps: GatewayDeps): express.Express {
  const app = express();
  app.disable("x-powered-by");
  // Only hops inside TRUSTED_PROXY_CIDRS may set X-Forwarded-For (req.ip).
  app.set("trust proxy", trustProxyPredicate(deps.config.TRUSTED_PROXY_CIDRS));

  app.use(requestId);
  app.use(httpMetrics(deps.metrics));
  app.use(helmet({ contentSecurityPolicy: { directives: { defaultSrc: ["'self'"] } } }));
  const allowedOrigins = new Set(deps.config.CORS_ALLOWED_ORIGINS);
  app.use(
    cors({
      origin: (origin, callback) => callback(null, origin !== undefined && allowedOrigins.has(origin)),
      exposedHeaders: ["X-Request-ID", "Retry-After"],
      maxAge: 600,
    }),
  );

  const auth = requireAuth(deps);
  const guards: Guards = { auth, admin: [auth, requireAdmin] };

  const api = Router();
  api.use(express.json({ limit: deps.config.API_JSON_MAX_BODY_BYTES, strict: true }));
  api.use(publicAccountRouter(deps));
  api.use(accountRouter(deps, guards));
  api.use(userSettingsRouter(deps, guards));
  app.use("/api", api);

  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return app;
}
