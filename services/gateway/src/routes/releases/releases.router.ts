import { Router } from "express";
import type { GatewayDeps } from "../../gateway.deps.js";
import type { Release } from "./changelog.parser.js";
import { defaultRootDir, loadReleases } from "./releases.repository.js";

export interface ReleasesRouterOptions {
  /** Where CHANGELOG.md and dist/releases.json are; the repository root by default. */
  rootDir?: string;
}

/** GET /api/releases (public): release notes from the build plus this build's version and time. */
export function releasesRouter(deps: Pick<GatewayDeps, "config" | "logger" | "build">, options: ReleasesRouterOptions = {}): Router {
  const router = Router();
  const rootDir = options.rootDir ?? defaultRootDir;
  // Read once, on first use: the notes belong to the build and do not change while it runs.
  let releases: Promise<Release[]> | undefined;
  const load = () => {
    releases ??= loadReleases({
      rootDir,
      logger: deps.logger,
      ...(deps.config.RELEASES_BASE_URL ? { baseUrl: deps.config.RELEASES_BASE_URL } : {}),
    }).catch((error: unknown) => {
      releases = undefined;
      throw error;
    });
    return releases;
  };

  router.get("/releases", async (_req, res) => {
    res.json({ releases: await load(), build: { buildVersion: deps.build.buildVersion, builtAt: deps.build.builtAt } });
  });

  return router;
}
