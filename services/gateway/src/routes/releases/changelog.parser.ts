/**
 * Parses a keep-a-changelog CHANGELOG.md into the contract's release list.
 * Pure (no I/O): the build step and the runtime fallback both call it.
 *
 * - A release is a level-2 heading `## [1.2.3] - 2024-05-01` (brackets
 *   optional, a leading `v` allowed, `-`, `–` or `—` as separator, an optional
 *   trailing `[YANKED]`). Its body is the Markdown up to the next level-2
 *   heading, without link reference definitions.
 * - `## [Unreleased]` is left out: it has no tag and no date, so it is not a
 *   release. Other headings that are not a version are skipped with a warning.
 * - `id` counts releases from the oldest (1) upwards, so ids stay stable as
 *   new releases are added at the top; `tagName` is `v<version>`; a semver
 *   pre-release (`1.0.0-rc.1`) is `prerelease: true`; `publishedAt` is the
 *   heading's date at 00:00 UTC.
 * - `htmlUrl`: `baseUrl` + tag when given; else the changelog's own link
 *   reference for the version (`[1.2.3]: https://...`); else
 *   `fallbackBaseUrl` + tag.
 */

export interface Release {
  id: number;
  tagName: string;
  title: string;
  body: string;
  htmlUrl: string;
  publishedAt: string;
  prerelease: boolean;
}

export interface ParseChangelogOptions {
  /** Wins over everything: the tag is appended (`https://github.com/o/r/releases/tag/`). */
  baseUrl?: string;
  /** Used when the changelog has no link reference for a version. */
  fallbackBaseUrl: string;
}

export interface ParsedChangelog {
  releases: Release[];
  /** Headings or lines that were skipped, for the build log. */
  warnings: string[];
}

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;
const HEADING = /^##(?!#)\s+(.*?)\s*$/;
const RELEASE_HEADING = /^\[?v?([^\]\s]+?)\]?(?:\s+[-–—]\s+(\d{4}-\d{2}-\d{2}))?(\s+\[YANKED\])?$/i;
const LINK_REFERENCE = /^\s{0,3}\[([^\]]+)\]:\s*(\S+)/;
const FENCE = /^\s{0,3}(```|~~~)/;

interface Section {
  heading: string;
  line: number;
  body: string[];
}

export function parseChangelog(markdown: string, options: ParseChangelogOptions): ParsedChangelog {
  const warnings: string[] = [];
  const links = new Map<string, string>();
  const sections: Section[] = [];
  let current: Section | undefined;
  let fence: string | undefined;

  const lines = markdown.replace(/^\uFEFF/, "").split(/\r?\n/);
  lines.forEach((line, index) => {
    const fenceMatch = FENCE.exec(line);
    if (fenceMatch?.[1]) {
      if (fence === undefined) fence = fenceMatch[1];
      else if (fence === fenceMatch[1]) fence = undefined;
      current?.body.push(line);
      return;
    }
    if (fence === undefined) {
      const link = LINK_REFERENCE.exec(line);
      if (link?.[1] && link[2]) {
        links.set(normaliseLabel(link[1]), link[2]);
        return;
      }
      const heading = HEADING.exec(line);
      if (heading) {
        current = { heading: heading[1] ?? "", line: index + 1, body: [] };
        sections.push(current);
        return;
      }
      // A level-1 heading ends the current section (it would not belong to it).
      if (/^#(?!#)\s/.test(line)) {
        current = undefined;
        return;
      }
    }
    current?.body.push(line);
  });

  const found: Omit<Release, "id" | "htmlUrl">[] = [];
  const seen = new Set<string>();
  for (const section of sections) {
    const match = RELEASE_HEADING.exec(section.heading);
    const version = match?.[1];
    if (!match || !version) {
      warnings.push(`line ${section.line}: not a release heading: ${section.heading}`);
      continue;
    }
    if (version.toLowerCase() === "unreleased") continue;
    if (!SEMVER.test(version)) {
      warnings.push(
        /^\d/.test(version)
          ? `line ${section.line}: not a semantic version: ${version}`
          : `line ${section.line}: not a release heading: ${section.heading}`,
      );
      continue;
    }
    const publishedAt = match[2] ? isoDate(match[2]) : undefined;
    if (!publishedAt) {
      warnings.push(`line ${section.line}: release ${version} has no valid date (YYYY-MM-DD)`);
      continue;
    }
    if (seen.has(version)) {
      warnings.push(`line ${section.line}: release ${version} appears twice; the first one is kept`);
      continue;
    }
    seen.add(version);
    found.push({
      tagName: `v${version}`,
      title: match[3] ? `${version} [YANKED]` : version,
      body: section.body.join("\n").trim(),
      publishedAt,
      prerelease: (SEMVER.exec(version)?.[4] ?? "") !== "",
    });
  }

  const releases = found.map((release, index) => {
    const version = release.tagName.slice(1);
    return {
      id: found.length - index,
      ...release,
      htmlUrl: releaseUrl(release.tagName, links.get(normaliseLabel(version)) ?? links.get(normaliseLabel(release.tagName)), options),
    };
  });
  return { releases, warnings };
}

/** `baseUrl` + tag, else the changelog's link when it is an http(s) URL, else `fallbackBaseUrl` + tag. */
export function releaseUrl(tagName: string, changelogLink: string | undefined, options: ParseChangelogOptions): string {
  if (options.baseUrl) return joinTag(options.baseUrl, tagName);
  if (changelogLink && isHttpUrl(changelogLink)) return new URL(changelogLink).toString();
  return joinTag(options.fallbackBaseUrl, tagName);
}

function joinTag(base: string, tagName: string): string {
  return new URL(encodeURIComponent(tagName), base.endsWith("/") ? base : `${base}/`).toString();
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

/** Link labels match case-insensitively (CommonMark). */
function normaliseLabel(label: string): string {
  return label.trim().toLowerCase();
}

/** `2024-05-01` -> `2024-05-01T00:00:00.000Z`; undefined for impossible dates such as 2024-02-30. */
function isoDate(date: string): string | undefined {
  const parsed = new Date(`${date}T00:00:00.000Z`);
  if (Number.isNaN(parsed.getTime())) return undefined;
  const iso = parsed.toISOString();
  return iso.startsWith(date) ? iso : undefined;
}
