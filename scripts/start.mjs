#!/usr/bin/env node
// `npm start` on a fresh clone: installs dependencies when they are missing
// or older than the lockfile, builds when sources are newer than the last
// build, then runs the all-in-one service in the foreground. Plain Node, no
// dependencies: it runs before anything is installed.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { constants } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { nodeFlagsFor } from "./service-node-flags.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const PNPM = "pnpm@10.34.8";
const entry = join(root, "services", "all-in-one", "dist", "main.js");
const buildInfoPath = join(root, "dist", "build-info.json");

function say(message) {
  console.log(`roost: ${message}`);
}

function mtimeMs(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return undefined;
  }
}

const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
if (major < 20 || (major === 20 && minor < 19)) {
  console.error(`roost: Node.js >= 20.19 is required, this is ${process.versions.node}`);
  process.exit(1);
}

/** Workspace package folders, from the globs in pnpm-workspace.yaml ("dir/*" or "dir"). */
function workspacePackages() {
  let text = "";
  try {
    text = readFileSync(join(root, "pnpm-workspace.yaml"), "utf8");
  } catch {
    return [];
  }
  const globs = [];
  let inPackages = false;
  for (const line of text.split(/\r?\n/)) {
    if (/^packages:\s*$/.test(line)) inPackages = true;
    else if (/^\S/.test(line)) inPackages = false;
    else if (inPackages) {
      const match = /^\s+-\s+["']?([^"'#]+?)["']?\s*(#.*)?$/.exec(line);
      if (match?.[1]) globs.push(match[1]);
    }
  }
  const folders = [];
  for (const glob of globs) {
    if (glob.endsWith("/*")) {
      const parent = join(root, glob.slice(0, -2));
      if (!existsSync(parent)) continue;
      for (const name of readdirSync(parent)) folders.push(join(parent, name));
    } else {
      folders.push(join(root, glob));
    }
  }
  return folders.filter((folder) => existsSync(join(folder, "package.json")));
}

/** Why dependencies must be installed, or undefined when they are in place. */
function installReason() {
  const storeLock = join(root, "node_modules", ".pnpm", "lock.yaml");
  if (!existsSync(join(root, "node_modules", ".pnpm"))) return "node_modules is missing";
  const lockfileMtime = mtimeMs(join(root, "pnpm-lock.yaml"));
  const installedMtime = mtimeMs(storeLock);
  if (lockfileMtime !== undefined && (installedMtime === undefined || installedMtime < lockfileMtime)) {
    return "pnpm-lock.yaml changed since the last install";
  }
  for (const folder of workspacePackages()) {
    const manifest = readJson(join(folder, "package.json")) ?? {};
    const dependencyCount =
      Object.keys(manifest.dependencies ?? {}).length + Object.keys(manifest.devDependencies ?? {}).length;
    if (dependencyCount > 0 && !existsSync(join(folder, "node_modules"))) {
      return `${relative(root, folder)}/node_modules is missing`;
    }
  }
  return undefined;
}

/** Runs a command with inherited stdio; exits with its code on failure. */
function runOrExit(description, command, args) {
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit", shell: process.platform === "win32" });
  if (result.error || result.status !== 0) {
    console.error(`roost: ${description} failed${result.error ? `: ${result.error.message}` : ""}`);
    process.exit(result.status || 1);
  }
}

// 1. Dependencies.
const reason = installReason();
if (reason) {
  const frozen = existsSync(join(root, "pnpm-lock.yaml"));
  say(`installing dependencies with ${PNPM} (${reason})`);
  runOrExit("dependency install", "npx", ["--yes", PNPM, "install", ...(frozen ? ["--frozen-lockfile"] : [])]);
}

// 2. Build, unless the last build is newer than every input.
function newestInputMtime() {
  let newest = 0;
  const visit = (path) => {
    let stats;
    try {
      stats = statSync(path);
    } catch {
      return;
    }
    if (stats.isDirectory()) {
      for (const name of readdirSync(path)) {
        if (name !== "node_modules" && name !== "dist" && name !== "generated") visit(join(path, name));
      }
    } else {
      newest = Math.max(newest, stats.mtimeMs);
    }
  };
  for (const file of ["package.json", "pnpm-lock.yaml", "tsconfig.json", "tsconfig.base.json", join("prisma", "schema.prisma")]) {
    visit(join(root, file));
  }
  for (const folder of workspacePackages()) {
    visit(join(folder, "src"));
    visit(join(folder, "package.json"));
    visit(join(folder, "tsconfig.json"));
  }
  return newest;
}

const lastBuild = mtimeMs(buildInfoPath);
if (lastBuild === undefined || !existsSync(entry) || newestInputMtime() > lastBuild) {
  say("building (scripts/build.mjs)");
  runOrExit("build", process.execPath, [join(root, "scripts", "build.mjs")]);
} else {
  say("build is up to date");
}

// 3. Run. Signals are passed on so the service runs its ordered shutdown;
// we exit with its exit code (128 + signal number when a signal ended it).
say(`starting ${relative(root, entry)}`);
const child = spawn(process.execPath, [...nodeFlagsFor("all-in-one", process.env), entry, ...process.argv.slice(2)], { cwd: root, stdio: "inherit" });
// SIGHUP (terminal closed) becomes SIGTERM: the service shuts down in order instead of dying.
const forwarded = { SIGINT: "SIGINT", SIGTERM: "SIGTERM", SIGHUP: "SIGTERM" };
for (const [received, sent] of Object.entries(forwarded)) {
  process.on(received, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(sent);
  });
}
// `npm start` runs this script under `sh -c`. A SIGTERM sent to the npm
// process alone (a supervisor or container runtime stopping "npm start")
// reaches the shell, which dies without passing it on, and this process is
// left orphaned with the service still running. Being re-parented is the
// sign: it is handled like SIGTERM, so the service shuts down in order.
const parentAtStart = process.ppid;
const orphanWatch = setInterval(() => {
  if (process.ppid === parentAtStart) return;
  clearInterval(orphanWatch);
  // Whoever read our output may be gone too: a write error must not end this process before the service.
  process.stdout.on("error", () => undefined);
  process.stderr.on("error", () => undefined);
  say("the process that started npm start is gone: stopping");
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
}, 500);
orphanWatch.unref();
child.on("error", (error) => {
  console.error(`roost: could not start ${relative(root, entry)}: ${error.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  process.exit(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0));
});
