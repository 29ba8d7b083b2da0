import { parseChangelog, releaseUrl } from "./changelog.parser.js";

const FALLBACK = "https://github.com/acme/roost/releases/tag/";

const CHANGELOG = `# Changelog

All notable changes to this project are documented here.

## [Unreleased]
### Added
- Something not released yet.

## [1.2.0] - 2024-05-01
### Added
- Rotating proxies.

\`\`\`
## [9.9.9] - 2030-01-01  (inside a code block: not a heading)
\`\`\`

### Fixed
- A bug.

## [1.2.0-rc.1] – 2024-04-20
- Release candidate.

## v1.1.0 - 2024-03-01 [YANKED]
- Pulled.

## [1.0.0] - 2024-01-15
First release.

[unreleased]: https://github.com/acme/roost/compare/v1.2.0...HEAD
[1.2.0]: https://github.com/acme/roost/compare/v1.1.0...v1.2.0
[1.0.0]: https://github.com/acme/roost/releases/tag/v1.0.0
`;

describe("parseChangelog", () => {
  it("turns keep-a-changelog sections into releases, newest first, without [Unreleased]", () => {
    const { releases, warnings } = parseChangelog(CHANGELOG, { fallbackBaseUrl: FALLBACK });
    expect(warnings).toEqual([]);
    expect(releases).toEqual([
      {
        id: 4,
        tagName: "v1.2.0",
        title: "1.2.0",
        body: "### Added\n- Rotating proxies.\n\n```\n## [9.9.9] - 2030-01-01  (inside a code block: not a heading)\n```\n\n### Fixed\n- A bug.",
        htmlUrl: "https://github.com/acme/roost/compare/v1.1.0...v1.2.0",
        publishedAt: "2024-05-01T00:00:00.000Z",
        prerelease: false,
      },
      {
        id: 3,
        tagName: "v1.2.0-rc.1",
        title: "1.2.0-rc.1",
        body: "- Release candidate.",
        htmlUrl: `${FALLBACK}v1.2.0-rc.1`,
        publishedAt: "2024-04-20T00:00:00.000Z",
        prerelease: true,
      },
      {
        id: 2,
        tagName: "v1.1.0",
        title: "1.1.0 [YANKED]",
        body: "- Pulled.",
        htmlUrl: `${FALLBACK}v1.1.0`,
        publishedAt: "2024-03-01T00:00:00.000Z",
        prerelease: false,
      },
      {
        id: 1,
        tagName: "v1.0.0",
        title: "1.0.0",
        body: "First release.",
        htmlUrl: "https://github.com/acme/roost/releases/tag/v1.0.0",
        publishedAt: "2024-01-15T00:00:00.000Z",
        prerelease: false,
      },
    ]);
  });

  it("keeps ids stable when a new release is added on top", () => {
    const before = parseChangelog(CHANGELOG, { fallbackBaseUrl: FALLBACK }).releases;
    const after = parseChangelog(CHANGELOG.replace("## [1.2.0] - 2024-05-01", "## [1.3.0] - 2024-06-01\n- New.\n\n## [1.2.0] - 2024-05-01"), {
      fallbackBaseUrl: FALLBACK,
    }).releases;
    expect(after[0]).toMatchObject({ id: 5, tagName: "v1.3.0" });
    expect(after.slice(1).map((r) => [r.id, r.tagName])).toEqual(before.map((r) => [r.id, r.tagName]));
  });

  it("lets a configured base URL win over changelog links", () => {
    const { releases } = parseChangelog(CHANGELOG, { baseUrl: "https://git.example.org/roost/-/tags", fallbackBaseUrl: FALLBACK });
    expect(releases.map((r) => r.htmlUrl)).toEqual([
      "https://git.example.org/roost/-/tags/v1.2.0",
      "https://git.example.org/roost/-/tags/v1.2.0-rc.1",
      "https://git.example.org/roost/-/tags/v1.1.0",
      "https://git.example.org/roost/-/tags/v1.0.0",
    ]);
  });

  it("skips headings that are not dated releases, with a warning each", () => {
    const text = [
      "# Changelog",
      "## [2.0.0]",
      "- no date",
      "## [1.9.0] - 2024-02-30",
      "- impossible date",
      "## Notes",
      "- not a version",
      "## [1.8] - 2024-01-01",
      "- not semver",
      "## [1.7.0] - 2024-01-01",
      "- kept",
      "## [1.7.0] - 2023-12-01",
      "- duplicate",
      "",
    ].join("\r\n");
    const { releases, warnings } = parseChangelog(`\uFEFF${text}`, { fallbackBaseUrl: FALLBACK });
    expect(releases.map((r) => [r.tagName, r.body])).toEqual([["v1.7.0", "- kept"]]);
    expect(warnings).toEqual([
      "line 2: release 2.0.0 has no valid date (YYYY-MM-DD)",
      "line 4: release 1.9.0 has no valid date (YYYY-MM-DD)",
      "line 6: not a release heading: Notes",
      "line 8: not a semantic version: 1.8",
      "line 12: release 1.7.0 appears twice; the first one is kept",
    ]);
  });

  it("gives an empty list for an empty or release-less changelog", () => {
    expect(parseChangelog("", { fallbackBaseUrl: FALLBACK })).toEqual({ releases: [], warnings: [] });
    expect(parseChangelog("# Changelog\n\n## [Unreleased]\n- soon\n", { fallbackBaseUrl: FALLBACK })).toEqual({ releases: [], warnings: [] });
  });
});

describe("releaseUrl", () => {
  it("always yields an absolute http(s) URL", () => {
    expect(releaseUrl("v1.0.0", "javascript:alert(1)", { fallbackBaseUrl: FALLBACK })).toBe(`${FALLBACK}v1.0.0`);
    expect(releaseUrl("v1.0.0", "../relative", { fallbackBaseUrl: "https://x.example/tags" })).toBe("https://x.example/tags/v1.0.0");
    expect(releaseUrl("v1.0.0+build/1", undefined, { fallbackBaseUrl: FALLBACK })).toBe(`${FALLBACK}v1.0.0%2Bbuild%2F1`);
  });
});
