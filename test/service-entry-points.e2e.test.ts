import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createTestDatabase, createTestRedis, freePort, waitFor, type TestDatabase, type TestRedis } from "@roost/testkit";
import { runServiceProcess, type ServiceProcess } from "./support/service-process.js";

/**
 * The split services' entry points (services/<name>/dist/main.js, built
 * first) as an operator runs them: a missing or bad variable exits 1 naming
 * it, a started service answers, and SIGTERM stops it with exit code 0.
 */

const run = (service: string, env: Record<string, string>): ServiceProcess => runServiceProcess(service, env, "info");

describe("service entry points", () => {
  let database: TestDatabase;
  let redis: TestRedis;
  let dataDir: string;
  const children: ReturnType<typeof run>[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    redis = createTestRedis();
    dataDir = await mkdtemp(path.join(os.tmpdir(), "roost-entry-"));
  });

  afterAll(async () => {
    for (const started of children) if (started.child.exitCode === null && started.child.signalCode === null) started.child.kill("SIGKILL");
    await Promise.all(children.map((started) => started.exited));
    await database.drop();
    await redis.cleanup();
    await rm(dataDir, { recursive: true, force: true });
  });

  const infra = (): Record<string, string> => ({ DATABASE_URL: database.url, REDIS_URL: redis.url, QUEUE_PREFIX: redis.prefix.slice(0, -1) });

  it("exit 1 on a bad or missing variable, with a message naming it and nothing else on stderr", async () => {
    const badLevel = run("gateway", { ...infra(), LOG_LEVEL: "loud", DATA_DIR: dataDir });
    const noDatabase = run("maintenance", { REDIS_URL: redis.url });
    const noSmtp = run("mailer", infra());
    children.push(badLevel, noDatabase, noSmtp);
    expect(await badLevel.exited).toBe("1");
    expect(badLevel.output.stderr).toMatch(/^Invalid configuration:\n {2}- LOG_LEVEL: .*\n$/);
    expect(await noDatabase.exited).toBe("1");
    expect(noDatabase.output.stderr).toBe("Invalid configuration:\n  - DATABASE_URL and REDIS_URL are required when the maintenance worker runs alone\n");
    expect(await noSmtp.exited).toBe("1");
    expect(noSmtp.output.stderr).toBe("Invalid configuration:\n  - SMTP_HOST, MAIL_FROM_ADDRESS, PUBLIC_APP_URL: required when the mailer runs alone\n");
  }, 60_000);

  it("every service alone stops its boot on a NODE_ENV other than development, production or test", async () => {
    const started = ["gateway", "checker", "scraper", "rotator", "mailer", "maintenance"].map((service) => run(service, { ...infra(), DATA_DIR: dataDir, NODE_ENV: "Production" }));
    children.push(...started);
    for (const service of started) {
      expect(await service.exited).toBe("1");
      expect(service.output.stderr).toMatch(/^Invalid configuration:\n(.*\n)* {2}- NODE_ENV: expected development, production, test \(lower case\), got "Production"\n/);
    }
  }, 60_000);

  it("the gateway alone serves, then exits 0 on SIGTERM with nothing on stderr", async () => {
    const port = await freePort();
    const gateway = run("gateway", { ...infra(), PORT: String(port), DATA_DIR: dataDir, PASSWORD_HASH_MEMORY_KIB: "1024", PASSWORD_HASH_TIME_COST: "1" });
    children.push(gateway);
    const health = await waitFor(
      async () => {
        if (gateway.child.exitCode !== null) throw new Error(`gateway exited: ${gateway.output.stderr}`);
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        return res.status === 200 ? ((await res.json()) as { status: string }) : null;
      },
      { timeoutMs: 30_000, what: "the gateway to answer /healthz" },
    );
    expect(health.status).toBe("ok");
    gateway.child.kill("SIGTERM");
    // On a failure the log (stdout) is compared too, so the report shows which shutdown step failed.
    const gatewayExit = await gateway.exited;
    const gatewayLog = gatewayExit === "0" ? "" : gateway.output.stdout;
    expect({ exit: gatewayExit, stderr: gateway.output.stderr, log: gatewayLog }).toEqual({ exit: "0", stderr: "", log: "" });
  }, 60_000);

  it("the mailer alone serves /healthz and /metrics on MAILER_METRICS_PORT, then exits 0 on SIGTERM", async () => {
    const port = await freePort();
    const mailer = run("mailer", {
      ...infra(),
      SMTP_HOST: "127.0.0.1",
      MAIL_FROM_ADDRESS: "roost@example.com",
      PUBLIC_APP_URL: "https://roost.example.com",
      MAILER_METRICS_PORT: String(port),
    });
    children.push(mailer);
    const health = await waitFor(
      async () => {
        if (mailer.child.exitCode !== null) throw new Error(`mailer exited: ${mailer.output.stderr}`);
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        return res.status === 200 ? ((await res.json()) as { status: string; workerId: string }) : null;
      },
      { timeoutMs: 30_000, what: "the mailer to answer /healthz" },
    );
    expect(health).toEqual({ status: "ok", workerId: expect.any(String) });
    const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^# HELP /m);
    const missing = await fetch(`http://127.0.0.1:${port}/nope`);
    expect([missing.status, await missing.json()]).toEqual([404, { error: "Not found" }]);
    mailer.child.kill("SIGTERM");
    const mailerExit = await mailer.exited;
    const mailerLog = mailerExit === "0" ? "" : mailer.output.stdout;
    expect({ exit: mailerExit, stderr: mailer.output.stderr, log: mailerLog }).toEqual({ exit: "0", stderr: "", log: "" });
  }, 60_000);

  it("the checker alone: exit 1 without its URLs, else /healthz and its metrics on CHECKER_METRICS_PORT and exit 0 on SIGTERM", async () => {
    const unconfigured = run("checker", { REDIS_URL: redis.url });
    children.push(unconfigured);
    expect(await unconfigured.exited).toBe("1");
    expect(unconfigured.output.stderr).toBe("Invalid configuration:\n  - DATABASE_URL and REDIS_URL are required when the checker runs alone\n");
    const port = await freePort();
    const checker = run("checker", { ...infra(), CHECKER_METRICS_PORT: String(port) });
    children.push(checker);
    const health = await waitFor(
      async () => {
        if (checker.child.exitCode !== null) throw new Error(`checker exited: ${checker.output.stderr}`);
        const res = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null);
        return res?.status === 200 ? ((await res.json()) as { status: string; service: string }) : null;
      },
      { timeoutMs: 30_000, what: "the checker to answer /healthz" },
    );
    expect(health).toMatchObject({ status: "ok", service: "checker" });
    expect(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()).toMatch(/^# HELP svc_check_in_flight /m);
    checker.child.kill("SIGTERM");
    const exit = await checker.exited;
    expect({ exit, stderr: checker.output.stderr, log: exit === "0" ? "" : checker.output.stdout }).toEqual({ exit: "0", stderr: "", log: "" });
  }, 60_000);
  it("the rotator alone: exit 1 without its URLs, else /healthz and its metrics on ROTATOR_METRICS_PORT and exit 0 on SIGTERM", async () => {
    const unconfigured = run("rotator", { REDIS_URL: redis.url });
    children.push(unconfigured);
    expect(await unconfigured.exited).toBe("1");
    expect(unconfigured.output.stderr).toBe("Invalid configuration:\n  - DATABASE_URL and REDIS_URL are required when the rotator runs alone\n");
    const port = await freePort();
    const rotator = run("rotator", { ...infra(), ROTATOR_METRICS_PORT: String(port), ROTATOR_INSTANCE_ID: "entry-point", ROTATOR_PASSWORD_KEY: "entry-point-key" });
    children.push(rotator);
    const health = await waitFor(
      async () => {
        if (rotator.child.exitCode !== null) throw new Error(`rotator exited: ${rotator.output.stderr}`);
        const res = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null);
        return res?.status === 200 ? ((await res.json()) as { status: string; service: string; instance_id: string }) : null;
      },
      { timeoutMs: 30_000, what: "the rotator to answer /healthz" },
    );
    expect(health).toMatchObject({ status: "ok", service: "rotator", instance_id: "entry-point" });
    rotator.child.kill("SIGTERM");
    const exit = await rotator.exited;
    expect({ exit, stderr: rotator.output.stderr, log: exit === "0" ? "" : rotator.output.stdout }).toEqual({ exit: "0", stderr: "", log: "" });
  }, 60_000);
});
