import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { waitFor } from "@roost/testkit";

/** The built standalone mailer (`tsc -b` first; npm test builds before the e2e tier). */
export const mailerMain = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../services/mailer/dist/main.js");

export interface MailerProcess {
  readonly child: ChildProcess;
  readonly workerId: string;
  /** Everything the process wrote so far (JSON log lines). */
  output(): string;
  /** Resolves with the exit code or signal once the process is gone. */
  exited: Promise<string>;
  /** SIGTERM (graceful: finishes messages being sent) and waits for the exit. */
  stop(): Promise<string>;
  /** SIGKILL: no cleanup at all, as a crash or an OOM kill. */
  kill(): Promise<string>;
}

/**
 * Runs `node services/mailer/dist/main.js` as a real child process and waits
 * for its "mailer started" log line (which carries its worker id).
 */
export async function startMailerProcess(env: Record<string, string>, timeoutMs = 20_000): Promise<MailerProcess> {
  if (!existsSync(mailerMain)) throw new Error(`${mailerMain} is missing: build first (node_modules/.bin/tsc -b tsconfig.json)`);
  const child = spawn(process.execPath, [mailerMain], {
    env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  const exited = new Promise<string>((resolve) => child.once("exit", (code, signal) => resolve(signal ?? String(code))));

  // Resolves with the worker id, or with null as soon as the process exits (then fail at once).
  const started = await waitFor(
    () => {
      if (child.exitCode !== null || child.signalCode !== null) return { workerId: null };
      for (const line of output.split("\n")) {
        if (!line.includes('"mailer started"')) continue;
        const parsed = JSON.parse(line) as { workerId?: unknown };
        if (typeof parsed.workerId === "string") return { workerId: parsed.workerId };
      }
      return null;
    },
    { timeoutMs, what: "the mailer process to start" },
  ).catch((error: unknown) => {
    child.kill("SIGKILL");
    throw error;
  });
  if (started.workerId === null) throw new Error(`mailer exited before starting:\n${output}`);
  const workerId = started.workerId;

  const signal = (name: NodeJS.Signals) => async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(name);
    return exited;
  };
  return { child, workerId, output: () => output, exited, stop: signal("SIGTERM"), kill: signal("SIGKILL") };
}
