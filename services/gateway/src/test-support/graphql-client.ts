import type { GatewayHarness } from "./gateway.harness.js";

/**
 * POST /api/graphql as a client sends it: a JSON body of `query` and
 * `variables`, with `Bearer <bearer>` unless `bearer` is null.
 */
export function postGraphql(h: GatewayHarness, query: string, variables: Record<string, unknown> | undefined, bearer: string | null) {
  const req = h.http.post("/api/graphql").set("Content-Type", "application/json");
  if (bearer !== null) req.set("Authorization", `Bearer ${bearer}`);
  return req.send(JSON.stringify({ query, variables }));
}
