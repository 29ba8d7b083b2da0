#!/usr/bin/env node
// Release notes for GET /api/releases: parses CHANGELOG.md into
// dist/releases.json. Runs after `tsc -b` (it imports the compiled parser);
// npm run build calls it. RELEASES_BASE_URL, when set, is where release pages
// live (the tag is appended); otherwise CHANGELOG.md link references, else the
// `repository` of package.json, decide the links. See docs/releases.md.
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { buildReleasesFile } = await import(
  pathToFileURL(join(root, "services", "gateway", "dist", "routes", "releases", "releases.repository.js")).href
);

const baseUrl = process.env.RELEASES_BASE_URL?.trim() || undefined;
const { file, releases, warnings } = await buildReleasesFile(root, baseUrl ? { baseUrl } : {});
for (const warning of warnings) console.warn(`build-releases: ${warning}`);
console.log(`build-releases: ${releases.length} release(s) written to ${relative(root, file)}`);
