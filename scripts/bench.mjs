#!/usr/bin/env node
// npm run bench [-- --smoke] [-- --part=inventory|checker|scraper|rotator]: builds the benchmarks (and
// what they import) with tsc, then runs each part, all of them by default. Inventory, checker and
// rotator need PostgreSQL and Redis on 127.0.0.1 (override with BENCH_DATABASE_URL / BENCH_REDIS_URL);
// the scraper part needs neither. See docs/benchmarks.md.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const tsc = path.join(root, "node_modules", ".bin", "tsc");
const PARTS = { inventory: "inventory.bench.js", checker: "checker.bench.js", scraper: "scraper.bench.js", rotator: "rotator.bench.js" };

const args = process.argv.slice(2);
const part = args.find((arg) => arg.startsWith("--part="))?.slice("--part=".length) ?? "all";
if (part !== "all" && !(part in PARTS)) {
  process.stderr.write(`bench: --part must be all, ${Object.keys(PARTS).join(", ")}; got "${part}"\n`);
  process.exit(2);
}
const build = spawnSync(tsc, ["-b", path.join(root, "bench", "tsconfig.json")], { stdio: "inherit", cwd: root });
if (build.status !== 0) {
  process.stderr.write("bench: build failed\n");
  process.exit(build.status ?? 1);
}
const passed = args.filter((arg) => !arg.startsWith("--part="));
let status = 0;
for (const [name, entry] of Object.entries(PARTS)) {
  if (part !== "all" && part !== name) continue;
  const run = spawnSync(process.execPath, [path.join(root, "bench", "dist", entry), ...passed], { stdio: "inherit", cwd: root });
  if (run.status !== 0) status = run.status ?? 1;
}
process.exit(status);
