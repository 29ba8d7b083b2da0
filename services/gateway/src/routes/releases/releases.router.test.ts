import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import express from "express";
import request from "supertest";
import { createLogger } from "@roost/observability";
import { gatewayConfigFromEnv } from "../../config/gateway.config.js";
import { releasesRouter } from "./releases.router.js";

describe("GET /api/releases", () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "roost-releases-router-"));
    await writeFile(
      path.join(root, "CHANGELOG.md"),
      "# Changelog\n\n## [Unreleased]\n- soon\n\n## [2.0.0-beta.1] - 2025-03-01\n- beta\n\n## [1.0.0] - 2025-01-01\n- first\n",
    );
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  function app(env: Record<string, string> = {}) {
    const deps = {
      config: gatewayConfigFromEnv(env),
      logger: createLogger({ silent: true }),
      build: { buildVersion: "1.0.0+abc1234", builtAt: "2025-01-02T03:04:05.000Z" },
    };
    const app = express();
    app.use("/api", releasesRouter(deps, { rootDir: root }));
    return app;
  }

  it("serves the release list and this build's metadata", async () => {
    const res = await request(app({ RELEASES_BASE_URL: "https://github.com/acme/roost/releases/tag" })).get("/api/releases");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      releases: [
        {
          id: 2,
          tagName: "v2.0.0-beta.1",
          title: "2.0.0-beta.1",
          body: "- beta",
          htmlUrl: "https://github.com/acme/roost/releases/tag/v2.0.0-beta.1",
          publishedAt: "2025-03-01T00:00:00.000Z",
          prerelease: true,
        },
        {
          id: 1,
          tagName: "v1.0.0",
          title: "1.0.0",
          body: "- first",
          htmlUrl: "https://github.com/acme/roost/releases/tag/v1.0.0",
          publishedAt: "2025-01-01T00:00:00.000Z",
          prerelease: false,
        },
      ],
      build: { buildVersion: "1.0.0+abc1234", builtAt: "2025-01-02T03:04:05.000Z" },
    });
  });

  it("reads the notes once: they belong to the running build", async () => {
    const http = request(app());
    const first = await http.get("/api/releases");
    await writeFile(path.join(root, "CHANGELOG.md"), "# Changelog\n");
    const second = await http.get("/api/releases");
    expect(second.body).toEqual(first.body);
    expect((second.body as { releases: unknown[] }).releases).toHaveLength(2);
  });
});
