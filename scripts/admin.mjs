#!/usr/bin/env node
// `npm run admin -- create|promote ...`: a thin launcher of the compiled CLI
// (services/gateway/src/cli/admin.cli.ts). Builds first when the compiled
// entry is missing (fresh clone), then hands over the arguments unchanged.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const entry = join(root, "services", "gateway", "dist", "cli", "admin.cli.js");

if (!existsSync(entry)) {
  // Build output goes to stderr so stdout carries only the CLI's answer.
  const build = spawnSync(process.execPath, [join(root, "scripts", "build.mjs")], { cwd: root, stdio: ["ignore", 2, 2] });
  if (build.status !== 0 || !existsSync(entry)) {
    console.error("admin: the build failed; run `npm run build` and try again");
    process.exit(1);
  }
}

await import(pathToFileURL(entry).href);
