import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmod, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { embeddedPostgresUrl } from "@roost/embedded";
import { freePort, waitFor } from "@roost/testkit";
import pg from "pg";

/**
 * The README's first command on a fresh clone: `npm start` with no
 * DATABASE_URL and no REDIS_URL installs, builds, starts an embedded
 * PostgreSQL and a local redis-server, serves the API, and on Ctrl-C (SIGINT
 * to the whole foreground process group, as a terminal sends it) stops
 * leaving no process behind.
 */
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Processes whose command line mentions `needle` (the clone's path). */
async function processesMentioning(needle: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, "utf8")).replace(/\0/g, " ");
      if (cmdline.includes(needle)) found.push(`${pid}: ${cmdline.trim()}`);
    } catch {
      // gone already
    }
  }
  return found;
}

/** This process's environment without anything that would point `npm start` at other servers, plus PORT. */
function startEnv(port: number): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !["DATABASE_URL", "REDIS_URL", "NODE_ENV", "JWT_SECRET", "DATA_DIR", "PORT", "HOST"].includes(key)) env[key] = value;
  }
  env.PORT = String(port);
  return env;
}

describe("npm start on a fresh clone", () => {
  let dir: string;
  let child: ChildProcess | undefined;
  let output = "";

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "roost-start-"));
    // PostgreSQL runs as the `postgres` user when we are root: it must traverse the path.
    await chmod(dir, 0o755);
    const clone = spawnSync("git", ["clone", "-q", repo, path.join(dir, "r")], { encoding: "utf8" });
    if (clone.status !== 0) throw new Error(`git clone failed: ${clone.stderr}`);
  });

  afterAll(async () => {
    if (child?.pid && child.exitCode === null) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    for (const line of await processesMentioning(dir)) {
      try {
        process.kill(Number(line.split(":")[0]), "SIGKILL");
      } catch {
        // already gone
      }
    }
    await rm(dir, { recursive: true, force: true });
  });

  it("serves the API with embedded PostgreSQL and Redis, then stops cleanly", async () => {
    const clone = path.join(dir, "r");
    const port = await freePort();
    // A bound other than the default, to see the variable reach the local redis-server.
    const maxMemoryBytes = 256 * 1024 * 1024;
    const env = { ...startEnv(port), LOCAL_REDIS_MAX_MEMORY_BYTES: String(maxMemoryBytes) };
    child = spawn("npm", ["start"], { cwd: clone, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const base = `http://127.0.0.1:${port}`;

    // Resolves as soon as the API is ready or npm start has exited (then fail at once).
    const outcome = await waitFor(
      async () => {
        if (child?.exitCode !== null || child?.signalCode !== null) return "exited";
        const res = await fetch(`${base}/readyz`);
        return res.status === 200 && ((await res.json()) as { status: string }).status === "ready" ? "ready" : null;
      },
      { timeoutMs: 540_000, intervalMs: 500, what: "/readyz to report ready" },
    ).catch((error: Error) => error.message);
    if (outcome !== "ready") {
      throw new Error(`npm start did not become ready (${outcome}, exit ${child.exitCode})\n--- npm start output ---\n${output.slice(-4000)}`);
    }
    expect(output).toContain(`http://127.0.0.1:${port}`);
    const readiness = (await (await fetch(`${base}/readyz`)).json()) as { components: Record<string, { details?: Record<string, number> }> };
    expect(readiness.components.redis_memory?.details?.max_bytes).toBe(maxMemoryBytes);

    const credentials = { email: "first@example.com", password: "Correct-Horse-42" };
    const registered = await fetch(`${base}/api/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(credentials),
    });
    expect(registered.status).toBe(201);
    const login = await fetch(`${base}/api/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(credentials),
    });
    expect(login.status).toBe(200);
    const { token, role } = (await login.json()) as { token: string; role: string };
    expect(role).toBe("admin");
    const me = await fetch(`${base}/api/checkLogin`, { headers: { authorization: `Bearer ${token}` } });
    expect(await me.json()).toEqual({ user_id: expect.any(Number), role: "admin" });

    // The admin CLI finds the running embedded servers through DATA_DIR alone.
    // The password on standard input: never a command-line argument.
    const cli = spawnSync("npm", ["run", "--silent", "admin", "--", "create", "--email", "ops@example.com"], {
      cwd: clone,
      env: { ...env, PORT: undefined },
      input: `${credentials.password}\n`,
      encoding: "utf8",
      timeout: 120_000,
    });
    expect([cli.status, cli.stderr]).toEqual([0, expect.any(String)]);
    const opsLogin = await fetch(`${base}/api/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "ops@example.com", password: credentials.password }),
    });
    expect(await opsLogin.json()).toEqual({ token: expect.any(String), role: "admin" });

    // The gateway has a pool of its own beside the workers' (checker, scraper, mailer, maintenance, rotator).
    const databaseUrl = await embeddedPostgresUrl(path.join(clone, ".data"));
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    try {
      const pools = await waitFor(async () => {
        const { rows } = await admin.query<{ name: string }>(
          "SELECT DISTINCT application_name AS name FROM pg_stat_activity WHERE application_name IN ('roost', 'roost-gateway', 'roost-workers') ORDER BY 1",
        );
        const names = rows.map((row) => row.name);
        return names.includes("roost-gateway") && names.includes("roost-workers") ? names : null;
      }, { timeoutMs: 30_000, what: "the gateway's and the workers' connections" });
      expect(pools).toEqual(["roost-gateway", "roost-workers"]);
    } finally {
      await admin.end();
    }

    // The embedded servers are children of this run.
    const processes = await processesMentioning(dir);
    expect(processes.some((line) => /postgres|redis-server/.test(line))).toBe(true);
    // The service hosts the gateway, so it runs with the gateway's V8 flags (scripts/service-node-flags.mjs).
    const { GATEWAY_NODE_FLAGS } = (await import(path.join(repo, "scripts", "service-node-flags.mjs"))) as { GATEWAY_NODE_FLAGS: string[] };
    const service = processes.find((line) => line.includes("services/all-in-one/dist/main.js"));
    expect(GATEWAY_NODE_FLAGS.length).toBeGreaterThan(0);
    expect(service?.split(" ")).toEqual(expect.arrayContaining(GATEWAY_NODE_FLAGS));

    process.kill(-(child.pid ?? 0), "SIGINT");
    await waitFor(() => child?.exitCode !== null || child?.signalCode !== null, {
      timeoutMs: 60_000,
      what: "npm start to exit after SIGINT",
    });
    await waitFor(async () => (await processesMentioning(dir)).length === 0, {
      timeoutMs: 30_000,
      what: "every process of the run to exit",
    }).catch(async (error: Error) => {
      throw new Error(`${error.message}\n${(await processesMentioning(dir)).join("\n")}\n--- output ---\n${output.slice(-3000)}`);
    });
  }, 660_000);

  it("stops in order when only the npm process gets SIGTERM (a supervisor stopping `npm start`)", async () => {
    const clone = path.join(dir, "r");
    const port = await freePort();
    const env = startEnv(port);
    output = "";
    child = spawn("npm", ["start"], { cwd: clone, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    // Built by the test before: this start only runs the service.
    await waitFor(
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null);
        return res?.status === 200;
      },
      { timeoutMs: 180_000, intervalMs: 500, what: "/readyz to report ready" },
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n--- npm start output ---\n${output.slice(-4000)}`);
    });

    // npm passes SIGTERM to the `sh -c` it runs the script in, which dies without passing it on.
    if (child.pid === undefined) throw new Error("npm start has no pid");
    process.kill(child.pid, "SIGTERM");
    await waitFor(async () => (await processesMentioning(dir)).length === 0, {
      timeoutMs: 60_000,
      what: "every process of the run to exit",
    }).catch(async (error: Error) => {
      throw new Error(`${error.message}\n${(await processesMentioning(dir)).join("\n")}\n--- output ---\n${output.slice(-3000)}`);
    });
    // An ordered shutdown, not a kill: the service said so, and stopped its embedded servers.
    expect(output).toContain('"message":"shutting down"');
    expect(output).toContain("embedded PostgreSQL stopped");
  }, 300_000);
});
