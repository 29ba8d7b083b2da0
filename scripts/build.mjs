#!/usr/bin/env node
// Builds Roost (npm run build): the Prisma client when schema.prisma changed,
// then every TypeScript project (tsc -b, incremental), then dist/build-info.json
// with the build's version and time. Plain Node, no dependencies. On failure it
// prints the failing step's output and exits non-zero.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const schemaPath = join(root, "prisma", "schema.prisma");
const generatedClientPath = join(root, "packages", "db", "src", "generated", "client.ts");

function mtimeMs(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

/** Runs one build step with captured output; prints it and exits on failure. */
function runStep(name, args, env = {}) {
  const startedAt = Date.now();
  const result = spawnSync(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  if (result.error || result.status !== 0) {
    process.stderr.write(`build: ${name} failed${result.status !== null ? ` (exit code ${result.status})` : ""}\n`);
    if (result.error) process.stderr.write(`${result.error.message}\n`);
    process.stderr.write(result.stdout ?? "");
    process.stderr.write(result.stderr ?? "");
    process.exit(result.status || 1);
  }
  console.log(`build: ${name} done in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
}

function gitShortSha() {
  const result = spawnSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" });
  return result.status === 0 ? result.stdout.trim() : "";
}

// 1. Prisma client: only when missing or older than the schema. The CLI wants
// a schema engine binary it would download; generation never runs it, so any
// existing file will do (see DESIGN.md, Infrastructure).
const schemaMtime = mtimeMs(schemaPath);
const clientMtime = mtimeMs(generatedClientPath);
if (schemaMtime === undefined) {
  process.stderr.write(`build: ${relative(root, schemaPath)} is missing\n`);
  process.exit(1);
}
if (clientMtime === undefined || clientMtime < schemaMtime) {
  runStep("prisma generate", [join(root, "node_modules", "prisma", "build", "index.js"), "generate", "--schema", schemaPath], {
    PRISMA_SCHEMA_ENGINE_BINARY: process.execPath,
    PRISMA_HIDE_UPDATE_MESSAGE: "1",
    CHECKPOINT_DISABLE: "1",
  });
} else {
  console.log("build: prisma client is up to date");
}

// 2. TypeScript: the root tsconfig.json references every project; -b rebuilds only what changed.
runStep("tsc -b", [join(root, "node_modules", "typescript", "bin", "tsc"), "-b", join(root, "tsconfig.json")]);

// 3. Release notes for GET /api/releases, parsed from CHANGELOG.md at build time.
runStep("release notes", [join(root, "scripts", "build-releases.mjs")]);

// 4. Build info for /healthz and /api/releases: version from package.json plus the commit, when known.
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const sha = gitShortSha();
const buildInfo = { buildVersion: sha ? `${version}+${sha}` : version, builtAt: new Date().toISOString() };
const buildInfoPath = join(root, "dist", "build-info.json");
mkdirSync(dirname(buildInfoPath), { recursive: true });
writeFileSync(`${buildInfoPath}.tmp`, `${JSON.stringify(buildInfo, null, 2)}\n`);
renameSync(`${buildInfoPath}.tmp`, buildInfoPath);
console.log(`build: ${buildInfo.buildVersion} built at ${buildInfo.builtAt}`);
