import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { parseChangelog, releaseUrl, type Release } from "./changelog.parser.js";

/**
 * Where the release list comes from. `npm run build` writes
 * `dist/releases.json` from CHANGELOG.md (scripts/build-releases.mjs calls
 * buildReleasesFile); the gateway reads that file, and only when it is
 * missing or unreadable parses CHANGELOG.md itself (a source checkout that was
 * never built).
 */

/** services/gateway/{src,dist}/routes/releases -> the repository root. */
export const defaultRootDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../..");

export const RELEASES_FILE = path.join("dist", "releases.json");

/**
 * Used when neither RELEASES_BASE_URL, a changelog link reference nor the
 * root package.json `repository` says where releases live. `.invalid` never
 * resolves (RFC 2606): the URL is well-formed and obviously unconfigured.
 */
export const UNCONFIGURED_RELEASES_BASE_URL = "https://releases.invalid/roost/";

const releaseSchema = z.object({
  id: z.number().int(),
  tagName: z.string(),
  title: z.string(),
  body: z.string(),
  htmlUrl: z.url({ protocol: /^https?$/ }),
  publishedAt: z.string(),
  prerelease: z.boolean(),
});
const releasesFileSchema = z.object({ releases: z.array(releaseSchema) });

export interface ReleasesLogger {
  warn(message: string, meta?: object): void;
}

/** Base of release pages from package.json `repository` (`git+https://github.com/o/r.git` -> `https://github.com/o/r/releases/tag/`). */
export async function repositoryReleasesBaseUrl(rootDir: string): Promise<string | undefined> {
  try {
    const pkg: unknown = JSON.parse(await readFile(path.join(rootDir, "package.json"), "utf8"));
    const repository = typeof pkg === "object" && pkg !== null && "repository" in pkg ? pkg.repository : undefined;
    const raw =
      typeof repository === "string"
        ? repository
        : typeof repository === "object" && repository !== null && "url" in repository && typeof repository.url === "string"
          ? repository.url
          : undefined;
    if (!raw) return undefined;
    const url = new URL(raw.replace(/^git\+/, "").replace(/\.git$/, ""));
    if (url.protocol !== "https:" && url.protocol !== "http:") return undefined;
    url.username = "";
    url.password = "";
    return `${url.toString().replace(/\/$/, "")}/releases/tag/`;
  } catch {
    return undefined;
  }
}

/** Parses `<rootDir>/CHANGELOG.md`; no changelog is an empty list. */
export async function releasesFromChangelog(
  rootDir: string,
  options: { baseUrl?: string },
): Promise<{ releases: Release[]; warnings: string[] }> {
  let markdown: string;
  try {
    markdown = await readFile(path.join(rootDir, "CHANGELOG.md"), "utf8");
  } catch {
    return { releases: [], warnings: ["CHANGELOG.md not found"] };
  }
  const fallbackBaseUrl = (await repositoryReleasesBaseUrl(rootDir)) ?? UNCONFIGURED_RELEASES_BASE_URL;
  return parseChangelog(markdown, { ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}), fallbackBaseUrl });
}

/** The build step: CHANGELOG.md -> dist/releases.json (written atomically). Returns what it wrote and the parser's warnings. */
export async function buildReleasesFile(
  rootDir: string,
  options: { baseUrl?: string } = {},
): Promise<{ file: string; releases: Release[]; warnings: string[] }> {
  const result = await releasesFromChangelog(rootDir, options);
  const file = path.join(rootDir, RELEASES_FILE);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(`${file}.tmp`, `${JSON.stringify({ releases: result.releases }, null, 2)}\n`);
  await rename(`${file}.tmp`, file);
  return { file, ...result };
}

/**
 * The release list the gateway serves: dist/releases.json, else CHANGELOG.md
 * parsed now. RELEASES_BASE_URL, when set at run time, rebuilds every
 * `htmlUrl` from the tag.
 */
export async function loadReleases(options: { rootDir: string; baseUrl?: string; logger: ReleasesLogger }): Promise<Release[]> {
  const { rootDir, baseUrl, logger } = options;
  const built = await readReleasesFile(rootDir, logger);
  if (built) {
    if (!baseUrl) return built;
    return built.map((release) => ({ ...release, htmlUrl: releaseUrl(release.tagName, undefined, { baseUrl, fallbackBaseUrl: baseUrl }) }));
  }
  const { releases, warnings } = await releasesFromChangelog(rootDir, baseUrl ? { baseUrl } : {});
  if (warnings.length > 0) logger.warn("release notes parsed with warnings", { warnings });
  return releases;
}

async function readReleasesFile(rootDir: string, logger: ReleasesLogger): Promise<Release[] | undefined> {
  let text: string;
  try {
    text = await readFile(path.join(rootDir, RELEASES_FILE), "utf8");
  } catch {
    return undefined;
  }
  try {
    const parsed = releasesFileSchema.safeParse(JSON.parse(text));
    if (parsed.success) return parsed.data.releases;
    logger.warn("dist/releases.json is invalid, parsing CHANGELOG.md instead", { issues: parsed.error.issues.slice(0, 5) });
  } catch (error) {
    logger.warn("dist/releases.json is not JSON, parsing CHANGELOG.md instead", { error });
  }
  return undefined;
}
