import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../test-support/gateway.harness.js";

/** U+0000 anywhere a client can put text is a 400, never a PostgreSQL error (500). */
describe("NUL characters in requests", () => {
  let h: GatewayHarness;
  let token: string;
  beforeAll(async () => {
    h = await startGatewayHarness();
    ({ token } = await h.register());
  });
  afterAll(async () => {
    await h.close();
  });

  it("refuses them in JSON bodies, query strings and GraphQL variables with 400 {error}", async () => {
    const auth = { Authorization: `Bearer ${token}` };
    const responses = [
      await h.http.post("/api/register").send({ email: "nul\u0000@example.com", password: STRONG_PASSWORD }),
      await h.http.post("/api/login").send({ email: "x@example.com\u0000", password: STRONG_PASSWORD }),
      await h.http.post("/api/user/settings").set(auth).send({ judges: [{ url: "http://azenv.net/\u0000", regex: "default" }] }),
      await h.http.get("/api/getProxyPage/1?country=%00").set(auth),
      await h.http.get("/api/getProxyPage/1?country=A%00").set(auth),
      await h.http.post("/api/saveSettings").set(auth).send({ geolite: { api_key: "k\u0000" } }),
      await h.http
        .post("/api/graphql")
        .set(auth)
        .send({
          query: "mutation($j: [JudgeInput!]) { updateUserSettings(input: { judges: $j }) { timeout } }",
          variables: { j: [{ url: "http://azenv.net/", regex: "a\u0000" }] },
        }),
    ];
    responses.forEach((res, i) => {
      expect([i, res.status, res.body]).toEqual([i, 400, { error: "Request contains a NUL character (U+0000)" }]);
    });
    // The process is fine and nothing was stored.
    expect((await h.http.get("/api/user/settings").set(auth)).status).toBe(200);
    expect(await h.db.prisma.user.count()).toBe(1);
  });

  it("reads escapes in the raw JSON text: an escaped backslash before u0000 is text, not a NUL", async () => {
    const auth = { Authorization: `Bearer ${token}` };
    const send = (path: string, jsonText: string, headers: Record<string, string> = {}) =>
      h.http
        .post(path)
        .set({ "Content-Type": "application/json", ...headers })
        .send(jsonText);
    const nul = [
      await send("/api/login", String.raw`{"email":"a@example.com\u0000","password":"x"}`),
      await send("/api/user/settings", String.raw`{"judges":[{"url":"http://azenv.net/","regex":"\\\u0000"}]}`, auth),
      await send("/api/user/settings", String.raw`{"judges\u0000":[]}`, auth),
    ];
    nul.forEach((res, i) => {
      expect([i, res.status, res.body]).toEqual([i, 400, { error: "Request contains a NUL character (U+0000)" }]);
    });

    // The JSON text "a\\\\u0000" is "a", two backslashes and the text "u0000" (a regex for a backslash then "u0000",
    // which RE2, the judge regex engine, accepts): stored and read back as sent.
    const saved = await send("/api/user/settings", String.raw`{"judges":[{"url":"http://azenv.net/","regex":"a\\\\u0000"}]}`, auth);
    expect(saved.status).toBe(200);
    const read = await h.http.get("/api/user/settings").set(auth);
    expect(read.body.judges).toEqual([{ url: "http://azenv.net/", regex: String.raw`a\\u0000` }]);
  });

  it("counts an uploaded line holding one as an invalid format", async () => {
    const res = await h.http
      .post("/api/addProxies")
      .set("Authorization", `Bearer ${token}`)
      .attach("file", Buffer.from("20.20.20.20:80:us\u0000er:pw\n21.21.21.21:8080\n"), "list.txt");
    expect(res.status).toBe(200);
    expect(res.body.details).toMatchObject({ submittedCount: 2, parsedCount: 1, invalidFormatCount: 1 });
  });
});
