import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { buildReleasesFile, loadReleases, repositoryReleasesBaseUrl, UNCONFIGURED_RELEASES_BASE_URL } from "./releases.repository.js";

const CHANGELOG = "# Changelog\n\n## [Unreleased]\n- next\n\n## [0.2.0] - 2025-02-02\n- second\n\n## [0.1.0] - 2025-01-01\n- first\n";

describe("release notes source", () => {
  let root: string;
  const warnings: unknown[] = [];
  const logger = { warn: (message: string, meta?: object) => void warnings.push([message, meta]) };

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "roost-releases-"));
    warnings.length = 0;
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("derives release pages from package.json `repository`", async () => {
    await writeFile(path.join(root, "package.json"), JSON.stringify({ repository: { type: "git", url: "git+https://github.com/acme/roost.git" } }));
    expect(await repositoryReleasesBaseUrl(root)).toBe("https://github.com/acme/roost/releases/tag/");
    await writeFile(path.join(root, "package.json"), JSON.stringify({ repository: "https://gitlab.example.org/team/roost" }));
    expect(await repositoryReleasesBaseUrl(root)).toBe("https://gitlab.example.org/team/roost/releases/tag/");
    await writeFile(path.join(root, "package.json"), JSON.stringify({ repository: "github:acme/roost" }));
    expect(await repositoryReleasesBaseUrl(root)).toBeUndefined();
  });

  it("builds dist/releases.json at build time, and the gateway serves that file", async () => {
    await writeFile(path.join(root, "CHANGELOG.md"), CHANGELOG);
    await writeFile(path.join(root, "package.json"), JSON.stringify({ repository: "https://github.com/acme/roost" }));
    const built = await buildReleasesFile(root);
    expect(built.file).toBe(path.join(root, "dist", "releases.json"));
    const file = JSON.parse(await readFile(built.file, "utf8")) as { releases: { tagName: string; htmlUrl: string }[] };
    expect(file.releases.map((r) => [r.tagName, r.htmlUrl])).toEqual([
      ["v0.2.0", "https://github.com/acme/roost/releases/tag/v0.2.0"],
      ["v0.1.0", "https://github.com/acme/roost/releases/tag/v0.1.0"],
    ]);

    // Once built, the changelog is not read again: the file is what is served.
    await writeFile(path.join(root, "CHANGELOG.md"), "# Changelog\n\n## [9.0.0] - 2030-01-01\n- not built\n");
    expect((await loadReleases({ rootDir: root, logger })).map((r) => r.tagName)).toEqual(["v0.2.0", "v0.1.0"]);
    // RELEASES_BASE_URL at run time rebuilds the links from the tags.
    expect((await loadReleases({ rootDir: root, baseUrl: "https://mirror.example.org/tags/", logger })).map((r) => r.htmlUrl)).toEqual([
      "https://mirror.example.org/tags/v0.2.0",
      "https://mirror.example.org/tags/v0.1.0",
    ]);
    expect(warnings).toEqual([]);
  });

  it("parses CHANGELOG.md at run time only when dist/releases.json is missing or broken", async () => {
    await writeFile(path.join(root, "CHANGELOG.md"), CHANGELOG);
    const fromChangelog = await loadReleases({ rootDir: root, logger });
    expect(fromChangelog.map((r) => [r.id, r.tagName, r.htmlUrl])).toEqual([
      [2, "v0.2.0", `${UNCONFIGURED_RELEASES_BASE_URL}v0.2.0`],
      [1, "v0.1.0", `${UNCONFIGURED_RELEASES_BASE_URL}v0.1.0`],
    ]);

    await mkdir(path.join(root, "dist"));
    await writeFile(path.join(root, "dist", "releases.json"), '{"releases": [{"id": "x"}]}');
    expect((await loadReleases({ rootDir: root, logger })).map((r) => r.tagName)).toEqual(["v0.2.0", "v0.1.0"]);
    expect(warnings).toEqual([["dist/releases.json is invalid, parsing CHANGELOG.md instead", expect.any(Object)]]);
  });

  it("serves an empty list when there is no changelog at all", async () => {
    expect(await loadReleases({ rootDir: root, logger })).toEqual([]);
  });
});
