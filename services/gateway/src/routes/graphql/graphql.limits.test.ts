import { buildSchema, parse, specifiedRules, validate } from "graphql";
import { queryLimitsRule } from "./graphql.limits.js";

// A recursive schema, so depth is unbounded without the rule.
const schema = buildSchema(`
  type Query { node: Node, nodes: [Node!]!, count: Int }
  type Node { id: Int, child: Node, children: [Node!]! }
`);

const check = (query: string, limits = { maxDepth: 3, maxCost: 100 }, extra: Partial<Parameters<typeof queryLimitsRule>[0]> = {}) =>
  validate(schema, parse(query), [...specifiedRules, queryLimitsRule({ ...limits, ...extra })]).map((e) => ({
    message: e.message,
    extensions: e.extensions,
  }));

describe("queryLimitsRule", () => {
  it("counts depth from the root field, through fragments and inline fragments", () => {
    expect(check("{ node { child { id } } }")).toEqual([]);
    expect(check("{ node { child { child { id } } } }")).toEqual([
      { message: "Operation is 4 levels deep; the limit is 3", extensions: { limit: "depth", depth: 4, maxDepth: 3 } },
    ]);
    expect(check("query Q { node { ...A } } fragment A on Node { child { ... on Node { child { id } } } }")).toEqual([
      { message: 'Operation "Q" is 4 levels deep; the limit is 3', extensions: { limit: "depth", depth: 4, maxDepth: 3 } },
    ]);
  });

  it("multiplies costs by list caps and field weights", () => {
    // nodes (1) + 10 × (id + children) + 10 × 10 × id = 1 + 20 + 100 = 121
    const query = "{ nodes { id children { id } } }";
    expect(check(query, { maxDepth: 10, maxCost: 121 }, { defaultListSize: 10 })).toEqual([]);
    expect(check(query, { maxDepth: 10, maxCost: 120 }, { defaultListSize: 10 })).toEqual([
      { message: "Operation costs 121; the limit is 120", extensions: { limit: "cost", cost: 121, maxCost: 120 } },
    ]);
    // Per-field list caps and weights.
    expect(check(query, { maxDepth: 10, maxCost: 1000 }, { listSizes: { "Query.nodes": 2, "Node.children": 3 } })).toEqual([]);
    const weighted = check("{ count a: count }", { maxDepth: 10, maxCost: 10 }, { fieldCosts: { "Query.count": 6 } });
    expect(weighted).toEqual([{ message: "Operation costs 12; the limit is 10", extensions: { limit: "cost", cost: 12, maxCost: 10 } }]);
  });

  it("exempts introspection and __typename, and survives fragment cycles", () => {
    expect(check("{ __schema { types { fields { type { ofType { ofType { name } } } } } } }")).toEqual([]);
    expect(check("{ __typename node { __typename } }", { maxDepth: 2, maxCost: 1 })).toEqual([]);
    const cyclic = check("{ node { ...A } } fragment A on Node { child { ...B } } fragment B on Node { child { ...A } }");
    expect(cyclic.some((e) => /Cannot spread fragment "A" within itself/.test(e.message))).toBe(true);
  });
});
