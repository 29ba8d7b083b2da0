import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../../test-support/gateway.harness.js";

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
    expect(typeof first.body.token).toBe("string");
    const second = await h.http.post("/api/register").send({ email: "bob@example.com", password: STRONG_PASSWORD });
    expect(second.status).toBe(201);

    const me = await h.http.get("/api/checkLogin").set("Authorization", `Bearer ${first.body.token}`);
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ user_id: expect.any(Number), role: "admin" });
    const role = await h.http.get("/api/user/role").set("Authorization", `Bearer ${second.body.token}`);
    expect(role.body).toBe("user");
    const stored = await h.db.prisma.user.findMany({ orderBy: { id: "asc" } });
    expect(stored.map((u) => [u.email, u.role])).toEqual([
      ["alice@example.com", "admin"],
      ["bob@example.com", "user"],
    ]);
  });

  it("logs in case-insensitively and refuses bad credentials with the contract's message", async () => {
    await h.register("carol@example.com");
    const ok = await h.http.post("/api/login").send({ email: "CAROL@example.com", password: STRONG_PASSWORD });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ token: expect.any(String), role: "admin" });
    const wrong = await h.http.post("/api/login").send({ email: "carol@example.com", password: "Wrong-Password-1" });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ error: "Invalid email or password" });
    expect(wrong.headers["content-type"]).toMatch(/application\/json/);
    const unknown = await h.http.post("/api/login").send({ email: "nobody@example.com", password: STRONG_PASSWORD });
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual({ error: "Invalid email or password" });
  });
});
