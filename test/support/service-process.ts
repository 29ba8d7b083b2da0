import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** A service's built entry point (services/<name>/dist/main.js) running as its own process. */
export interface ServiceProcess {
  child: ReturnType<typeof spawn>;
  output: { stdout: string; stderr: string };
  /** Its exit code, or the signal that ended it. */
  exited: Promise<string>;
}

/** Starts `services/<service>/dist/main.js` with only PATH, LOG_LEVEL (default `logLevel`) and `env`. */
export function runServiceProcess(service: string, env: Record<string, string>, logLevel = "warn"): ServiceProcess {
  const child = spawn(process.execPath, [path.join(repo, "services", service, "dist", "main.js")], {
    env: { PATH: process.env.PATH ?? "", LOG_LEVEL: logLevel, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = { stdout: "", stderr: "" };
  child.stdout?.on("data", (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exited = new Promise<string>((resolve) => child.once("exit", (code, signal) => resolve(signal ?? String(code))));
  return { child, output, exited };
}
