import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";

describe("GET /api/releases on the gateway", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it("is public and answers the contract's shape from this repository's release notes", async () => {
    for (const auth of [undefined, "Bearer not-a-token"]) {
      const req = h.http.get("/api/releases");
      if (auth) req.set("Authorization", auth);
      const res = await req;
      expect(res.status).toBe(200);
      expect(res.body.build).toEqual({ buildVersion: "test", builtAt: new Date(0).toISOString() });
      expect(Array.isArray(res.body.releases)).toBe(true);
      for (const release of res.body.releases as Record<string, unknown>[]) {
        expect(release).toEqual({
          id: expect.any(Number),
          tagName: expect.stringMatching(/^v\d+\.\d+\.\d+/),
          title: expect.any(String),
          body: expect.any(String),
          htmlUrl: expect.stringMatching(/^https?:\/\//),
          publishedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T00:00:00\.000Z$/),
          prerelease: expect.any(Boolean),
        });
      }
    }
  });
});
