#!/usr/bin/env node
// npm run bench [-- --smoke]: builds the benchmark (and what it imports) with
// tsc, then runs it. It needs PostgreSQL and Redis on 127.0.0.1 (override with
// BENCH_DATABASE_URL / BENCH_REDIS_URL); see docs/benchmarks.md.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const tsc = path.join(root, "node_modules", ".bin", "tsc");

const build = spawnSync(tsc, ["-b", path.join(root, "bench", "tsconfig.json")], { stdio: "inherit", cwd: root });
if (build.status !== 0) {
  process.stderr.write("bench: build failed\n");
  process.exit(build.status ?? 1);
}
const run = spawnSync(process.execPath, [path.join(root, "bench", "dist", "inventory.bench.js"), ...process.argv.slice(2)], {
  stdio: "inherit",
  cwd: root,
});
process.exit(run.status ?? 1);
