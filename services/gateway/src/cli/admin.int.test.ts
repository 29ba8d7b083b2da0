import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../test-support/gateway.harness.js";
import { startOwnedRedis } from "../test-support/owned-redis.js";
import { bearer } from "../test-support/token-claims.js";
import { AdminCommandError, createAdminAccount, promoteToAdmin } from "./admin.commands.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

/** Runs `npm run admin -- ...` the way npm does (node scripts/admin.mjs ...), with only the given environment. */
function runAdminCli(
  args: string[],
  env: Record<string, string | undefined>,
  stdin = "",
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(repoRoot, "scripts", "admin.mjs"), ...args], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stdin.end(stdin);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The instance's environment, as an operator would export it for the CLI. */
function cliEnv(h: GatewayHarness): Record<string, string | undefined> {
  const c = h.deps.config;
  return {
    NODE_ENV: c.NODE_ENV,
    DATABASE_URL: c.DATABASE_URL,
    REDIS_URL: c.REDIS_URL,
    QUEUE_PREFIX: c.QUEUE_PREFIX,
    DATA_DIR: h.dataDir,
    JWT_SECRET: c.JWT_SECRET,
    PASSWORD_HASH_MEMORY_KIB: String(c.PASSWORD_HASH_MEMORY_KIB),
    PASSWORD_HASH_TIME_COST: String(c.PASSWORD_HASH_TIME_COST),
  };
}

describe("admin commands", () => {
  let h: GatewayHarness;
  beforeEach(async () => {
    h = await startGatewayHarness({ NODE_ENV: "production" });
  });
  afterEach(async () => {
    await h?.close();
  });

  it("create: an admin on a production instance whose public bootstrap is closed, with registration's defaults", async () => {
    expect((await h.http.post("/api/register").send({ email: "hopeful@example.com", password: STRONG_PASSWORD })).status).toBe(403);
    const created = await createAdminAccount(h.deps, "  Root@Example.com ", STRONG_PASSWORD);
    expect(created.email).toBe("root@example.com");
    const login = await h.http.post("/api/login").send({ email: "root@example.com", password: STRONG_PASSWORD });
    expect(login.status).toBe(200);
    expect(login.body.role).toBe("admin");
    const settings = await h.http.get("/api/user/settings").set(bearer(login.body.token));
    expect(settings.body).toMatchObject({ timeout: 5000, retries: 1, transport_protocol: "tcp", judges: [{ url: "http://azenv.net/", regex: "default" }, { url: "https://pool.proxyspace.pro/judge.php", regex: "default" }] });
    // Public registration stays closed in production.
    expect((await h.http.post("/api/register").send({ email: "hopeful@example.com", password: STRONG_PASSWORD })).status).toBe(403);
  });

  it("create: the password policy, e-mail rules and uniqueness apply", async () => {
    await expect(createAdminAccount(h.deps, "root@example.com", "Abcdefgh12x")).rejects.toThrow(new AdminCommandError("Password must be at least 12 characters long"));
    await expect(createAdminAccount(h.deps, "root@example.com", "Correct Horse 42")).rejects.toThrow(/whitespace/);
    await expect(createAdminAccount(h.deps, "not-an-email", STRONG_PASSWORD)).rejects.toThrow(/not a valid e-mail/);
    expect(await h.db.prisma.user.count()).toBe(0);
    await createAdminAccount(h.deps, "root@example.com", STRONG_PASSWORD);
    await expect(createAdminAccount(h.deps, "ROOT@example.com", STRONG_PASSWORD)).rejects.toThrow(/already exists.*promote/);
    expect(await h.db.prisma.user.count()).toBe(1);
  });

  it("promote: role admin and the user's existing sessions revoked (their role claim is stale)", async () => {
    await createAdminAccount(h.deps, "root@example.com", STRONG_PASSWORD);
    const user = await h.db.prisma.user.create({
      data: { email: "dana@example.com", passwordHash: await h.deps.hasher.hash(STRONG_PASSWORD), role: "user" },
    });
    const before = await h.http.post("/api/login").send({ email: user.email, password: STRONG_PASSWORD });
    expect(before.body.role).toBe("user");

    expect(await promoteToAdmin(h.deps, " DANA@example.com")).toEqual({ userId: user.id, email: user.email, alreadyAdmin: false });
    expect((await h.db.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).role).toBe("admin");
    expect((await h.http.get("/api/checkLogin").set(bearer(before.body.token))).status).toBe(401);
    const after = await h.http.post("/api/login").send({ email: user.email, password: STRONG_PASSWORD });
    expect(after.body.role).toBe("admin");
    expect((await h.http.get("/api/checkLogin").set(bearer(after.body.token))).body).toEqual({ user_id: user.id, role: "admin" });

    expect(await promoteToAdmin(h.deps, user.email)).toEqual({ userId: user.id, email: user.email, alreadyAdmin: true });
    expect((await h.http.get("/api/checkLogin").set(bearer(after.body.token))).status).toBe(200);
    await expect(promoteToAdmin(h.deps, "ghost@example.com")).rejects.toThrow(/no account with e-mail ghost@example.com/);
  });
});

describe("admin promote with Redis stopped", () => {
  it("fails and changes nothing when the revocation cannot be written", async () => {
    const owned = await startOwnedRedis();
    let h: GatewayHarness | undefined;
    try {
      h = await startGatewayHarness({ REDIS_URL: owned.url, AUTH_REVOCATION_TIMEOUT_MS: "300" });
      await h.register("root@example.com");
      const { token } = await h.register("erin@example.com");
      await owned.stop();
      await expect(promoteToAdmin(h.deps, "erin@example.com")).rejects.toThrow(/nothing was changed/);
      expect((await h.db.prisma.user.findUniqueOrThrow({ where: { email: "erin@example.com" } })).role).toBe("user");
      expect(await h.db.prisma.tokenCutoff.count()).toBe(0);
      await owned.start();
      expect(await promoteToAdmin(h.deps, "erin@example.com")).toMatchObject({ alreadyAdmin: false });
      expect((await h.http.get("/api/checkLogin").set(bearer(token))).status).toBe(401);
    } finally {
      await h?.close();
      await owned.close();
    }
  });
});

describe("npm run admin (the real process)", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness({ NODE_ENV: "production" });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("create and promote exit 0 and do their work", async () => {
    // The password on standard input, as `printf '%s\n' "$pw" | npm run admin -- create ...` sends it.
    const created = await runAdminCli(["create", "--email", "Ops@Example.com"], cliEnv(h), `${STRONG_PASSWORD}\n`);
    expect(created).toEqual({ code: 0, stdout: expect.stringMatching(/^Created admin ops@example\.com \(user id \d+\)\.\n$/), stderr: "" });
    expect((await h.http.post("/api/login").send({ email: "ops@example.com", password: STRONG_PASSWORD })).body.role).toBe("admin");

    await h.db.prisma.user.create({ data: { email: "fay@example.com", passwordHash: await h.deps.hasher.hash(STRONG_PASSWORD), role: "user" } });
    const token = (await h.http.post("/api/login").send({ email: "fay@example.com", password: STRONG_PASSWORD })).body.token as string;
    const promoted = await runAdminCli(["promote", "--email", "fay@example.com"], cliEnv(h));
    expect(promoted.code).toBe(0);
    expect(promoted.stdout).toMatch(/Promoted fay@example\.com .* revoked/);
    expect((await h.http.get("/api/checkLogin").set(bearer(token))).status).toBe(401);
    expect((await h.http.post("/api/login").send({ email: "fay@example.com", password: STRONG_PASSWORD })).body.role).toBe("admin");
  });

  it("fails with a clear message and a non-zero exit", async () => {
    const weak = await runAdminCli(["create", "--email", "weak@example.com"], { ...cliEnv(h), ADMIN_PASSWORD: "short" });
    expect(weak).toEqual({ code: 1, stdout: "", stderr: "admin: Password must be at least 12 characters long\n" });

    const duplicate = await runAdminCli(["create", "--email", "ops@example.com"], { ...cliEnv(h), ADMIN_PASSWORD: STRONG_PASSWORD });
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toMatch(/already exists/);

    const unknown = await runAdminCli(["promote", "--email", "nobody@example.com"], cliEnv(h));
    expect(unknown).toEqual({ code: 1, stdout: "", stderr: "admin: no account with e-mail nobody@example.com\n" });

    const noDatabase = await runAdminCli(["promote", "--email", "ops@example.com"], { ...cliEnv(h), DATABASE_URL: undefined });
    expect(noDatabase.code).toBe(1);
    expect(noDatabase.stderr).toMatch(/DATABASE_URL is not set/);

    const noSecret = await runAdminCli(["promote", "--email", "ops@example.com"], { ...cliEnv(h), JWT_SECRET: undefined });
    expect(noSecret.code).toBe(1);
    expect(noSecret.stderr).toMatch(/JWT_SECRET/);

    const badRedis = await runAdminCli(["promote", "--email", "ops@example.com"], { ...cliEnv(h), REDIS_URL: "redis://127.0.0.1:1" });
    expect(badRedis.code).toBe(1);
    expect(badRedis.stderr).toMatch(/cannot reach Redis/);

    // A password on the command line is refused (ps and shell history show it), as is none at all.
    const onCommandLine = await runAdminCli(["create", "--email", "a@example.com", "--password", STRONG_PASSWORD], cliEnv(h));
    expect(onCommandLine.code).toBe(2);
    expect(onCommandLine.stderr).toMatch(/--password is not accepted/);
    for (const args of [
      [],
      ["frobnicate", "--email", "a@example.com"],
      ["create", "--email", "a@example.com"],
      ["promote"],
      ["promote", "--email", "a@example.com", "--role", "x"],
      ["promote", "--email", "a@example.com", "--password", STRONG_PASSWORD],
    ]) {
      const usage = await runAdminCli(args, cliEnv(h));
      expect([args, usage.code]).toEqual([args, 2]);
      expect(usage.stderr).toMatch(/Usage:/);
    }
    expect(await h.db.prisma.user.count({ where: { email: { in: ["weak@example.com", "a@example.com"] } } })).toBe(0);
  });
});
