import { buildSchema, parse, specifiedRules, validate, type GraphQLObjectType } from "graphql";
import { countFields, queryFieldsError, queryLimitsRule } from "./graphql.limits.js";

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

  it("measures each fragment once: a chain of fragments spreading the previous one twice is counted in full, not walked 2^n times", () => {
    const chain = Array.from({ length: 16 }, (_, i) => `fragment F${i + 1} on Node { ...F${i} ...F${i} }`).join(" ");
    const document = parse(`{ node { ...F16 } } fragment F0 on Node { id } ${chain}`);
    // Count how often the rule looks at Node's fields: once per field selection it visits.
    const counted = buildSchema(`type Query { node: Node } type Node { id: Int }`);
    const node = counted.getType("Node") as GraphQLObjectType;
    const getFields = node.getFields.bind(node);
    validate(counted, parse("{ node { id } }")); // the schema's one-time validation reads the fields too
    let visits = 0;
    node.getFields = () => {
      visits++;
      return getFields();
    };
    const errors = validate(counted, document, [queryLimitsRule({ maxDepth: 10, maxCost: 10_000 })]);
    // Its cost is node (1) + 2^16 × id; walked spread by spread, `id` would be visited 2^16 times.
    expect(errors.map((e) => e.extensions)).toEqual([{ limit: "cost", cost: 1 + 2 ** 16, maxCost: 10_000 }]);
    // Once for graphql-js's own type tracking as it walks the document, once for the rule.
    expect(visits).toBe(2);
    // The same fragment at two depths, and under a list: each spread gets its own depth and multiplier.
    const twice = "{ node { ...A } nodes { child { ...A } } } fragment A on Node { child { id } }";
    expect(check(twice, { maxDepth: 4, maxCost: 1000 }, { defaultListSize: 10 })).toEqual([]);
    expect(check(twice, { maxDepth: 3, maxCost: 25 }, { defaultListSize: 10 })).toEqual([
      { message: "Operation is 4 levels deep; the limit is 3", extensions: { limit: "depth", depth: 4, maxDepth: 3 } },
      // node 1 + A (child, id) 2 + nodes 1 + 10 × child + 10 × A (2) = 1 + 2 + 1 + 10 + 20 = 34
      { message: "Operation costs 34; the limit is 25", extensions: { limit: "cost", cost: 34, maxCost: 25 } },
    ]);
  });

  it("exempts introspection and __typename, and survives fragment cycles", () => {
    expect(check("{ __schema { types { fields { type { ofType { ofType { name } } } } } } }")).toEqual([]);
    expect(check("{ __typename node { __typename } }", { maxDepth: 2, maxCost: 1 })).toEqual([]);
    const cyclic = check("{ node { ...A } } fragment A on Node { child { ...B } } fragment B on Node { child { ...A } }");
    expect(cyclic.some((e) => /Cannot spread fragment "A" within itself/.test(e.message))).toBe(true);
  });
});

describe("queryFieldsError", () => {
  const limits = { maxTokens: 50, maxFields: 4 };

  it("counts every field as written: aliases, repeats, __typename, inline fragments, and each fragment once however often it is spread", () => {
    expect(countFields(parse("{ a: node { id } node { id id } __typename }"))).toBe(6);
    const spread = "query Q { node { ...F ...F ... on Node { id } } nodes { ...F } } fragment F on Node { id child { id } }";
    // node, id (inline), nodes; F: id, child, id
    expect(countFields(parse(spread))).toBe(6);
  });

  it("refuses a document past maxFields, naming the limit", () => {
    expect(queryFieldsError("{ node { id id id } }", limits)).toBeUndefined();
    const error = queryFieldsError("{ node { id id id id } }", limits);
    expect(error && { message: error.message, extensions: error.extensions }).toEqual({
      message: "Document has 5 fields; the limit is 4",
      extensions: { code: "GRAPHQL_VALIDATION_FAILED", limit: "fields", fields: 5, maxFields: 4 },
    });
    // Fields in fragments that no operation uses count too: validation compares them all the same.
    expect(queryFieldsError("{ count } fragment F on Node { id id id id }", limits)?.extensions).toMatchObject({ fields: 5 });
  });

  it("leaves syntax errors and documents past maxTokens to Apollo's parser", () => {
    expect(queryFieldsError("{ node { id", limits)).toBeUndefined();
    // 51 tokens holding 49 fields: the parser stops at the token limit before any field is counted.
    expect(queryFieldsError(`{ ${"id ".repeat(49)} }`, limits)).toBeUndefined();
    expect(queryFieldsError(`{ ${"id ".repeat(48)} }`, limits)?.extensions).toMatchObject({ fields: 48 });
  });
});
