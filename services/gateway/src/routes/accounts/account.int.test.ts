import type { Response } from "supertest";
import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { bearer, claimsOf } from "../../test-support/token-claims.js";

const NEW_PASSWORD = "Battery-Staple-77";

function expectJsonError(res: Response, status: number, error?: string): void {
  expect(res.status).toBe(status);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  expect(res.body).toEqual({ error: error ?? expect.any(String) });
}

describe("accounts", () => {
  let h: GatewayHarness;
  beforeEach(async () => {
    h = await startGatewayHarness();
  });
  afterEach(async () => {
    await h.close();
  });

  it("registers the first user as admin and later ones as user", async () => {
    const first = await h.http.post("/api/register").send({ email: "  Alice@Example.COM ", password: STRONG_PASSWORD });
    expect(first.status).toBe(201);
    expect(Object.keys(first.body)).toEqual(["token"]);
    const second = await h.http.post("/api/register").send({ email: "bob@example.com", password: STRONG_PASSWORD });
    expect(second.status).toBe(201);

    const me = await h.http.get("/api/checkLogin").set(bearer(first.body.token));
    expect(me.status).toBe(200);
    const stored = await h.db.prisma.user.findMany({ orderBy: { id: "asc" } });
    expect(stored.map((u) => [u.email, u.role])).toEqual([
      ["alice@example.com", "admin"],
      ["bob@example.com", "user"],
    ]);
    expect(me.body).toEqual({ user_id: stored[0]!.id, role: "admin" });
    const role = await h.http.get("/api/user/role").set(bearer(second.body.token));
    expect(role.status).toBe(200);
    expect(role.headers["content-type"]).toMatch(/^application\/json/);
    expect(role.text).toBe('"user"');
    const adminRole = await h.http.get("/api/user/role").set(bearer(first.body.token));
    expect(adminRole.text).toBe('"admin"');
    // The token carries the contract's claims.
    const claims = claimsOf(first.body.token);
    expect(claims).toEqual({ user_id: stored[0]!.id, role: "admin", iat: expect.any(Number), exp: expect.any(Number), jti: expect.any(String) });
    expect(claims.exp - claims.iat).toBe(10080 * 60);
  });

  it("logs in case-insensitively and refuses bad credentials with the contract's message", async () => {
    await h.register("carol@example.com");
    const ok = await h.http.post("/api/login").send({ email: " CAROL@example.com", password: STRONG_PASSWORD });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ token: expect.any(String), role: "admin" });
    const checked = await h.http.get("/api/checkLogin").set(bearer(ok.body.token));
    expect(checked.status).toBe(200);
    expectJsonError(await h.http.post("/api/login").send({ email: "carol@example.com", password: "Wrong-Password-1" }), 401, "Invalid email or password");
    expectJsonError(await h.http.post("/api/login").send({ email: "nobody@example.com", password: STRONG_PASSWORD }), 401, "Invalid email or password");
    expectJsonError(await h.http.post("/api/login").send({ email: "carol@example.com" }), 400);
    expectJsonError(await h.http.post("/api/login").send("not json").set("Content-Type", "application/json"), 400);
  });

  it("logout answers 204 with no body, then the token is refused", async () => {
    const { token } = await h.register();
    const other = (await h.http.post("/api/login").send({ email: (await h.db.prisma.user.findFirstOrThrow()).email, password: STRONG_PASSWORD })).body.token as string;
    const out = await h.http.post("/api/logout").set(bearer(token));
    expect(out.status).toBe(204);
    expect(out.text).toBe("");
    expectJsonError(await h.http.get("/api/checkLogin").set(bearer(token)), 401);
    expectJsonError(await h.http.post("/api/logout").set(bearer(token)), 401);
    // Only that token: the user's other session still works.
    expect((await h.http.get("/api/checkLogin").set(bearer(other))).status).toBe(200);
    expect(await h.db.prisma.revokedToken.count({ where: { jti: claimsOf(token).jti } })).toBe(1);
  });

  it("refreshToken returns a working token and revokes the previous one", async () => {
    const { token } = await h.register();
    const refreshed = await h.http.post("/api/refreshToken").set(bearer(token));
    expect(refreshed.status).toBe(200);
    expect(refreshed.body).toEqual({ token: expect.any(String), role: "admin" });
    expect(refreshed.body.token).not.toBe(token);
    expect(claimsOf(refreshed.body.token).jti).not.toBe(claimsOf(token).jti);
    expect((await h.http.get("/api/checkLogin").set(bearer(refreshed.body.token))).status).toBe(200);
    expectJsonError(await h.http.get("/api/checkLogin").set(bearer(token)), 401);
    expectJsonError(await h.http.post("/api/refreshToken").set(bearer(token)), 401);
  });

  it("concurrent refreshes (and logouts) of one token: exactly one succeeds, the rest 401, none 503", async () => {
    for (let round = 0; round < 3; round++) {
      const { token } = await h.register();
      const refreshes = await Promise.all(Array.from({ length: 12 }, () => h.http.post("/api/refreshToken").set(bearer(token))));
      expect(refreshes.map((r) => r.status).sort()).toEqual([200, ...Array<number>(11).fill(401)]);
      const logouts = await Promise.all(Array.from({ length: 6 }, () => h.http.post("/api/logout").set(bearer(refreshes.find((r) => r.status === 200)?.body.token as string))));
      expect(logouts.map((r) => r.status).sort()).toEqual([204, ...Array<number>(5).fill(401)]);
    }
  });

  it("changePassword: wrong old 401, policy 400, success revokes every earlier token", async () => {
    const { token, email } = await h.register();
    const login = async (password: string) => h.http.post("/api/login").send({ email, password });
    const second = (await login(STRONG_PASSWORD)).body.token as string;

    expectJsonError(
      await h.http.post("/api/changePassword").set(bearer(token)).send({ oldPassword: "Wrong-Password-1", newPassword: NEW_PASSWORD }),
      401,
    );
    expectJsonError(await h.http.post("/api/changePassword").set(bearer(token)).send({ oldPassword: STRONG_PASSWORD, newPassword: "short1A" }), 400);
    expectJsonError(await h.http.post("/api/changePassword").set(bearer(token)).send({ oldPassword: STRONG_PASSWORD }), 400);
    // Nothing changed by the refused attempts.
    expect((await login(STRONG_PASSWORD)).status).toBe(200);
    expect((await h.http.get("/api/checkLogin").set(bearer(token))).status).toBe(200);

    const changed = await h.http.post("/api/changePassword").set(bearer(second)).send({ oldPassword: STRONG_PASSWORD, newPassword: NEW_PASSWORD });
    expect(changed.status).toBe(200);
    expect(changed.headers["content-type"]).toMatch(/^application\/json/);
    expect(changed.text).toBe('"Password changed."');

    expectJsonError(await h.http.get("/api/checkLogin").set(bearer(token)), 401);
    expectJsonError(await h.http.get("/api/checkLogin").set(bearer(second)), 401);
    expectJsonError(await login(STRONG_PASSWORD), 401, "Invalid email or password");
    const fresh = await login(NEW_PASSWORD);
    expect(fresh.status).toBe(200);
    expect((await h.http.get("/api/checkLogin").set(bearer(fresh.body.token))).status).toBe(200);
  });

  it("deleteAccount: wrong password 401; success removes the user's rows, revokes tokens and frees the e-mail", async () => {
    await h.register(); // the admin; the account under test is a regular user
    const { token, email } = await h.register("dave@example.com");
    const user = await h.db.prisma.user.findUniqueOrThrow({ where: { email } });
    const other = (await h.http.post("/api/login").send({ email, password: STRONG_PASSWORD })).body.token as string;
    expect(await h.db.prisma.userSettings.count({ where: { userId: user.id } })).toBe(1);
    expect(await h.db.prisma.userJudge.count({ where: { userId: user.id } })).toBeGreaterThan(0);

    expectJsonError(await h.http.post("/api/deleteAccount").set(bearer(token)).send({ password: "Wrong-Password-1" }), 401);
    expectJsonError(await h.http.post("/api/deleteAccount").set(bearer(token)).send({}), 400);
    expect(await h.db.prisma.user.count({ where: { id: user.id } })).toBe(1);

    const deleted = await h.http.post("/api/deleteAccount").set(bearer(token)).send({ password: STRONG_PASSWORD });
    expect(deleted.status).toBe(200);
    expect(deleted.text).toBe('"Account deleted."');
    expectJsonError(await h.http.get("/api/checkLogin").set(bearer(token)), 401);
    expectJsonError(await h.http.get("/api/user/settings").set(bearer(other)), 401);

    expect(await h.db.prisma.user.count({ where: { id: user.id } })).toBe(0);
    expect(await h.db.prisma.userSettings.count({ where: { userId: user.id } })).toBe(0);
    expect(await h.db.prisma.userJudge.count({ where: { userId: user.id } })).toBe(0);
    expect(await h.db.prisma.accountPurge.findUnique({ where: { userId: user.id } })).toEqual({ userId: user.id, requestedAt: expect.any(Date) });
    // The cutoff outlives the user row, so the tokens stay revoked after a Redis re-seed.
    expect(await h.db.prisma.tokenCutoff.count({ where: { userId: user.id } })).toBe(1);
    expectJsonError(await h.http.post("/api/login").send({ email, password: STRONG_PASSWORD }), 401, "Invalid email or password");

    const again = await h.http.post("/api/register").send({ email: " DAVE@example.com", password: STRONG_PASSWORD });
    expect(again.status).toBe(201);
    expect(claimsOf(again.body.token).user_id).not.toBe(user.id);
    expect((await h.http.get("/api/checkLogin").set(bearer(again.body.token))).body).toEqual({ user_id: expect.any(Number), role: "user" });
    expectJsonError(await h.http.get("/api/checkLogin").set(bearer(token)), 401);
  });

  it.each([
    ["11 characters", "Abcdefgh12x"],
    ["no uppercase letter", "correct-horse-42"],
    ["no lowercase letter", "CORRECT-HORSE-42"],
    ["no digit", "Correct-Horse-xx"],
    ["a space", "Correct Horse 42"],
    ["a tab", "Correct\tHorse42"],
    ["a newline", "Correct-Horse-42\n"],
    ["not a string", 123456789012],
    ["missing", undefined],
  ])("refuses a password with %s: 400 {error}, nobody created", async (_case, password) => {
    const res = await h.http.post("/api/register").send({ email: "erin@example.com", password });
    expectJsonError(res, 400);
    expect(await h.db.prisma.user.count()).toBe(0);
  });

  it("accepts a password of exactly 12 characters meeting the policy", async () => {
    expect((await h.http.post("/api/register").send({ email: "twelve@example.com", password: "Abcdefgh123x" })).status).toBe(201);
  });

  it.each([
    [""],
    ["plainaddress"],
    ["user@localhost"],
    ["user@@example.com"],
    ["user name@example.com"],
    ["@example.com"],
    ["user@example..com"],
    ["user@-example.com"],
    ["user@example.c"],
    [`${"a".repeat(65)}@example.com`],
    [42],
    [null],
  ])("refuses the e-mail %p: 400 {error}", async (email) => {
    expectJsonError(await h.http.post("/api/register").send({ email, password: STRONG_PASSWORD }), 400);
    expect(await h.db.prisma.user.count()).toBe(0);
  });

  it("refuses a duplicate registration with 409, whatever the case or surrounding spaces", async () => {
    await h.register("frank@example.com");
    for (const email of ["frank@example.com", "FRANK@Example.com", "  frank@example.com\t"]) {
      expectJsonError(await h.http.post("/api/register").send({ email, password: STRONG_PASSWORD }), 409, "Email already registered");
    }
    expect(await h.db.prisma.user.count()).toBe(1);
  });

  it("answers 401 {error} on every auth route without a token", async () => {
    for (const [method, path] of [
      ["post", "/api/refreshToken"],
      ["post", "/api/logout"],
      ["get", "/api/checkLogin"],
      ["post", "/api/changePassword"],
      ["post", "/api/deleteAccount"],
      ["get", "/api/user/settings"],
      ["post", "/api/user/settings"],
      ["get", "/api/user/role"],
    ] as const) {
      expectJsonError(await h.http[method](path), 401);
    }
  });
});

describe("registration flags by NODE_ENV", () => {
  const cases: {
    name: string;
    env: Record<string, string>;
    first: number;
    second: number;
  }[] = [
    { name: "development defaults: bootstrap on, public registration on", env: { NODE_ENV: "development" }, first: 201, second: 201 },
    { name: "production defaults: first public registration refused", env: { NODE_ENV: "production" }, first: 403, second: 403 },
    {
      name: "production with ENABLE_PUBLIC_FIRST_ADMIN_BOOTSTRAP=true: first admin only",
      env: { NODE_ENV: "production", ENABLE_PUBLIC_FIRST_ADMIN_BOOTSTRAP: "true" },
      first: 201,
      second: 403,
    },
    {
      name: "production with both flags opened",
      env: { NODE_ENV: "production", ENABLE_PUBLIC_FIRST_ADMIN_BOOTSTRAP: "true", DISABLE_PUBLIC_REGISTRATION: "false" },
      first: 201,
      second: 201,
    },
    {
      name: "development with DISABLE_PUBLIC_REGISTRATION=true: first admin only",
      env: { NODE_ENV: "development", DISABLE_PUBLIC_REGISTRATION: "true" },
      first: 201,
      second: 403,
    },
    {
      name: "development with ENABLE_PUBLIC_FIRST_ADMIN_BOOTSTRAP=false",
      env: { NODE_ENV: "development", ENABLE_PUBLIC_FIRST_ADMIN_BOOTSTRAP: "false" },
      first: 403,
      second: 201,
    },
  ];

  it.each(cases)("$name", async ({ env, first, second }) => {
    const h = await startGatewayHarness(env);
    try {
      const a = await h.http.post("/api/register").send({ email: "first@example.com", password: STRONG_PASSWORD });
      if (first === 403) expectJsonError(a, 403);
      else expect(a.status).toBe(first);
      if (first === 403) {
        // With no public bootstrap an operator creates the first admin (the CLI does this).
        await h.db.prisma.user.create({ data: { email: "ops@example.com", passwordHash: "x", role: "admin" } });
      }
      const b = await h.http.post("/api/register").send({ email: "second@example.com", password: STRONG_PASSWORD });
      if (second === 403) expectJsonError(b, 403);
      else expect(b.status).toBe(second);
      const users = await h.db.prisma.user.findMany({ orderBy: { id: "asc" }, select: { email: true, role: true } });
      const expected = [
        ...(first === 201 ? [{ email: "first@example.com", role: "admin" }] : [{ email: "ops@example.com", role: "admin" }]),
        ...(second === 201 ? [{ email: "second@example.com", role: "user" }] : []),
      ];
      expect(users).toEqual(expected);
      if (second === 403) {
        // Closed registration does not reveal which e-mails exist: 403, not 409.
        expectJsonError(await h.http.post("/api/register").send({ email: users[0]!.email, password: STRONG_PASSWORD }), 403);
      }
    } finally {
      await h.close();
    }
  });
});

describe("first-user race", () => {
  const ROUNDS = 5;
  const CONCURRENT = 25;

  it(`${CONCURRENT} concurrent registrations on an empty database yield exactly one admin, ${ROUNDS} rounds`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const h = await startGatewayHarness({ RATE_LIMIT_REGISTER_PER_MINUTE: "1000" });
      try {
        const responses = await Promise.all(
          Array.from({ length: CONCURRENT }, (_, i) =>
            h.http.post("/api/register").send({ email: `racer${i}@example.com`, password: STRONG_PASSWORD }),
          ),
        );
        expect(responses.map((r) => r.status)).toEqual(Array(CONCURRENT).fill(201));
        const roles = responses.map((r) => claimsOf((r.body as { token: string }).token).role);
        expect(roles.filter((r) => r === "admin")).toHaveLength(1);
        const stored = await h.db.prisma.user.groupBy({ by: ["role"], _count: { _all: true }, orderBy: { role: "asc" } });
        expect(stored.map((g) => [g.role, g._count._all])).toEqual([
          ["admin", 1],
          ["user", CONCURRENT - 1],
        ]);
      } finally {
        await h.close();
      }
    }
  });
});
