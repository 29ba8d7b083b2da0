import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { postGraphql } from "../../test-support/graphql-client.js";
import { DASHBOARD_MESSAGE } from "./graphql.dashboard-rule.js";

/** `dashboard` is selected at most once per operation; a second is a validation error before anything runs. */
describe("GraphQL: one dashboard per operation", () => {
  let h: GatewayHarness;
  let token: string;
  beforeAll(async () => {
    h = await startGatewayHarness();
    ({ token } = await h.register());
  });
  afterAll(async () => {
    await h.close();
  });

  it("one dashboard (also merged from the same fragment spread twice) runs", async () => {
    for (const query of [
      "{ dashboard { total_checks } proxyCount }",
      "query Q { ...D ...D } fragment D on Query { dashboard { total_checks } }",
    ]) {
      const res = await postGraphql(h, query, undefined, token);
      expect([query, res.status, res.body.errors]).toEqual([query, 200, undefined]);
      expect(res.body.data.dashboard).toEqual({ total_checks: 0 });
    }
  });

  it("a second one, by alias, inline fragment or fragment, is a 400 validation error", async () => {
    const aliases = Array.from({ length: 100 }, (_, i) => `d${i}: dashboard { total_checks }`).join(" ");
    for (const query of [
      "{ a: dashboard { total_checks } b: dashboard { total_checks } }",
      `{ ${aliases} }`,
      "{ dashboard { total_checks } ... on Query { other: dashboard { total_checks } } }",
      "query Q { dashboard { total_checks } ...D } fragment D on Query { again: dashboard { total_checks } }",
    ]) {
      const res = await postGraphql(h, query, undefined, token);
      expect([query.slice(0, 60), res.status]).toEqual([query.slice(0, 60), 400]);
      expect(res.body.data).toBeUndefined();
      expect(res.body.errors).toEqual([
        expect.objectContaining({ message: DASHBOARD_MESSAGE, extensions: expect.objectContaining({ code: "GRAPHQL_VALIDATION_FAILED", limit: "dashboard" }) }),
      ]);
    }
  });
});
