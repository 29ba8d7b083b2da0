#!/usr/bin/env node
// npm test: every check and every test tier, then one plain closing line
// "N passed, N failed" (CI reads that line). Steps:
//   install (if needed) -> build -> type-check incl. tests -> lint -> madge
//   -> dependency rules (.dependency-cruiser.cjs)
//   -> jest unit -> jest integration -> jest e2e -> benchmark smoke run.
// Each static check counts as one test; jest tiers count their tests.
// A failing step does not stop the others, so one run shows everything.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const resultsDir = join(root, ".test-results");
mkdirSync(resultsDir, { recursive: true });
const bin = (name) => join(root, "node_modules", ".bin", name);

let passed = 0;
let failed = 0;
const summary = [];

function run(name, command, args, options = {}) {
  const startedAt = Date.now();
  process.stdout.write(`\n=== ${name}\n`);
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit", env: { ...process.env, ...options.env } });
  const ok = result.status === 0;
  summary.push(`${ok ? "ok  " : "FAIL"} ${name} (${((Date.now() - startedAt) / 1000).toFixed(1)} s)`);
  return ok;
}

function check(name, command, args, options) {
  if (run(name, command, args, options)) passed += 1;
  else failed += 1;
}

function jestTier(tier, extraArgs = []) {
  const outputFile = join(resultsDir, `${tier}.json`);
  const ok = run(
    `jest ${tier}`,
    process.execPath,
    [
      "--experimental-vm-modules",
      "--no-warnings",
      join(root, "node_modules", "jest", "bin", "jest.js"),
      "--ci",
      "--selectProjects",
      tier,
      "--json",
      `--outputFile=${outputFile}`,
      ...extraArgs,
    ],
  );
  let counted = false;
  if (existsSync(outputFile)) {
    try {
      const report = JSON.parse(readFileSync(outputFile, "utf8"));
      passed += report.numPassedTests;
      failed += report.numFailedTests;
      // A suite that failed to run (syntax error, failing hook) has no failed tests: count it.
      failed += report.testResults.filter((s) => s.status === "failed" && s.assertionResults.every((a) => a.status !== "failed")).length;
      if (report.numTotalTests === 0) {
        process.stdout.write(`jest ${tier}: no tests ran\n`);
        failed += 1;
      }
      counted = true;
    } catch {
      // fall through
    }
  }
  if (!counted || (!ok && failed === 0)) failed += 1;
}

// Install what is missing (a fresh clone), then build.
if (!existsSync(join(root, "node_modules", ".pnpm"))) {
  check("install", "npx", ["--yes", "pnpm@10.34.8", "install", "--frozen-lockfile"]);
}
const built = run("build", process.execPath, [join(root, "scripts", "build.mjs")]);
if (built) passed += 1;
else failed += 1;

check("typecheck (sources and tests)", bin("tsc"), ["-p", "tsconfig.tests.json"]);
check("lint (zero warnings)", bin("eslint"), [".", "--max-warnings", "0"]);
check("madge --circular", bin("madge"), ["--circular", "--extensions", "ts", "--exclude", "(/dist/|/generated/|node_modules)", "packages", "services"]);
check("dependency rules (dependency-cruiser)", bin("depcruise"), ["--config", ".dependency-cruiser.cjs", "packages", "services", "bench", "test"]);

if (built) {
  jestTier("unit");
  jestTier("integration");
  jestTier("e2e", ["--runInBand"]);
  if (existsSync(join(root, "scripts", "bench.mjs"))) {
    check("benchmark smoke run", process.execPath, [join(root, "scripts", "bench.mjs"), "--smoke", "--v8-flags=both"]);
  }
}

process.stdout.write(`\n=== summary\n${summary.join("\n")}\n\n`);
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(failed === 0 ? 0 : 1);
