import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { waitFor } from "@roost/testkit";

/** runService in a real process (the built helper): signals, stdout order, exit codes. */
const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), "test-support", "service-fixture.mjs");

function startFixture(env: Record<string, string>) {
  const child = spawn(process.execPath, [fixture], { env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const output = { stdout: "", stderr: "" };
  child.stdout.on("data", (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, output, exited };
}

describe("runService in a process", () => {
  it("on SIGTERM stops listeners, workers, queues, database, infrastructure in turn and exits 0", async () => {
    const service = startFixture({ LOG_LEVEL: "error" });
    await waitFor(() => service.output.stdout.includes("started\n"), { timeoutMs: 15_000, what: "the fixture to start" });
    service.child.kill("SIGTERM");
    expect(await service.exited).toEqual({ code: 0, signal: null });
    const steps = service.output.stdout.split("\n").filter((line) => line.startsWith("step "));
    expect(steps).toEqual(["step listeners", "step workers", "step queues", "step database", "step infrastructure"]);
  }, 30_000);

  it("exits 1 when the shutdown runs past its deadline", async () => {
    const service = startFixture({ LOG_LEVEL: "error", FIXTURE_STEP_MS: "10000" });
    await waitFor(() => service.output.stdout.includes("started\n"), { timeoutMs: 15_000, what: "the fixture to start" });
    service.child.kill("SIGINT");
    expect(await service.exited).toEqual({ code: 1, signal: null });
    expect(service.output.stdout).toContain("shutdown deadline passed");
  }, 30_000);

  it("exits 1 on a bad variable and names it on stderr, starting nothing", async () => {
    const service = startFixture({ LOG_LEVEL: "loud" });
    expect(await service.exited).toEqual({ code: 1, signal: null });
    expect(service.output.stderr).toMatch(/^Invalid configuration:\n {2}- LOG_LEVEL: /);
    expect(service.output.stdout).not.toContain("started");
  }, 30_000);
});
