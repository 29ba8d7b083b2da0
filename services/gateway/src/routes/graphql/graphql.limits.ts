import {
  getNamedType,
  getNullableType,
  GraphQLError,
  isListType,
  isObjectType,
  isInterfaceType,
  Kind,
  parse,
  visit,
  type DocumentNode,
  type GraphQLCompositeType,
  type GraphQLNamedType,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from "graphql";

/**
 * Static limits checked before execution, as a graphql-js validation rule
 * (violations come back as ordinary GraphQL validation errors, HTTP 400):
 *
 * - depth: nesting of fields below the operation; root fields are depth 1.
 * - cost: every selected field costs `fieldCosts[Type.field]` (default 1)
 *   times the product of the maximum sizes of the lists it sits in
 *   (`listSizes[Type.field]`, default `defaultListSize`). The maxima are the
 *   server-side caps (a proxies page holds at most 100 rows), so the bound
 *   holds whatever the variables say.
 *
 * Introspection subtrees (`__schema`, `__type`) are exempt so developer tools
 * work where introspection is on; in production introspection is off and
 * those fields are refused anyway. `__typename` costs nothing.
 */
export interface QueryLimits {
  maxDepth: number;
  maxCost: number;
  /** Extra weight of expensive fields, keyed `Type.field`. */
  fieldCosts?: Record<string, number>;
  /** Largest number of items a list field can return, keyed `Type.field`. */
  listSizes?: Record<string, number>;
  /** Size assumed for list fields missing from `listSizes`; 100. */
  defaultListSize?: number;
}

/**
 * `extensions.limit` of a violation (Apollo sets `extensions.code` of every
 * validation error to GRAPHQL_VALIDATION_FAILED; queryFieldsError sets the
 * same code).
 */
export const DEPTH_LIMIT = "depth";
export const COST_LIMIT = "cost";
export const FIELDS_LIMIT = "fields";

/**
 * Most lexical tokens (names, punctuation, values; commas and comments are
 * not tokens) in a query: graphql-js's `maxTokens`, so the parser stops
 * there and Apollo answers 400 GRAPHQL_PARSE_FAILED. GRAPHQL_MAX_QUERY_BYTES
 * alone let 16 KiB of `a:proxies(page:1){total}` through, 7,200 tokens that
 * graphql-js's OverlappingFieldsCanBeMergedRule compared pair by pair for
 * over a second on the event loop, before the cost rule could refuse them.
 * The largest useful query (a full proxies page and a proxy with every
 * field and statistics, dashboard and settings) has 231 tokens; 40 aliases
 * of a searched `proxies { total }` have 722.
 */
export const MAX_QUERY_TOKENS = 1000;

/**
 * Most field selections in a document, counted as written (a fragment's once,
 * however often it is spread), checked after parsing and before validation.
 * Validation compares every two fields that share a response name, so its
 * time grows with the square of their number: within 1000 tokens, 998
 * copies of `proxyCount` took 100 ms (graphql-js outside
 * NODE_ENV=production); 500 fields, under 30 ms. The largest useful query
 * has 133.
 */
export const MAX_QUERY_FIELDS = 500;

/** Field nodes in a document, in operations and fragment definitions alike, aliases and `__typename` included. */
export function countFields(document: DocumentNode): number {
  let fields = 0;
  visit(document, {
    Field() {
      fields++;
    },
  });
  return fields;
}

/**
 * The error for a query with more than `maxFields` fields, to be answered
 * before graphql-js validates it; undefined when it is within the limit or
 * does not parse within `maxTokens` (Apollo parses it again with the same
 * limit and reports the syntax error in its own words).
 */
export function queryFieldsError(query: string, { maxTokens, maxFields }: { maxTokens: number; maxFields: number }): GraphQLError | undefined {
  let document: DocumentNode;
  try {
    document = parse(query, { maxTokens, noLocation: true });
  } catch {
    return undefined;
  }
  const fields = countFields(document);
  if (fields <= maxFields) return undefined;
  return new GraphQLError(`Document has ${fields} fields; the limit is ${maxFields}`, {
    extensions: { code: "GRAPHQL_VALIDATION_FAILED", limit: FIELDS_LIMIT, fields, maxFields },
  });
}

interface Measure {
  depth: number;
  cost: number;
}

export function queryLimitsRule(limits: QueryLimits): ValidationRule {
  const fieldCosts = limits.fieldCosts ?? {};
  const listSizes = limits.listSizes ?? {};
  const defaultListSize = limits.defaultListSize ?? 100;

  return (context: ValidationContext) => {
    const schema = context.getSchema();
    /**
     * Each named fragment measured once, at multiplier 1 and depth 1: its cost
     * scales with the multiplier and its depth adds to the depth it is spread
     * at. Measured anew at every spread, a chain of fragments that each spread
     * the previous one twice took time exponential in its length (a 1 KB
     * query could hold the event loop for minutes).
     */
    const fragmentMeasures = new Map<string, Measure>();

    const measure = (
      selectionSet: SelectionSetNode,
      parent: GraphQLNamedType | undefined,
      multiplier: number,
      depth: number,
      fragmentsOnPath: ReadonlySet<string>,
    ): Measure => {
      let deepest = depth - 1;
      let cost = 0;
      for (const selection of selectionSet.selections) {
        let inner: Measure;
        if (selection.kind === Kind.FIELD) {
          const name = selection.name.value;
          if (name === "__typename") {
            deepest = Math.max(deepest, depth);
            continue;
          }
          if (name === "__schema" || name === "__type") continue;
          const field = parent && (isObjectType(parent) || isInterfaceType(parent)) ? parent.getFields()[name] : undefined;
          const key = `${parent?.name ?? "?"}.${name}`;
          cost += (fieldCosts[key] ?? 1) * multiplier;
          deepest = Math.max(deepest, depth);
          if (!selection.selectionSet) continue;
          const isList = field ? isListType(getNullableType(field.type)) : false;
          const childMultiplier = isList ? multiplier * (listSizes[key] ?? defaultListSize) : multiplier;
          inner = measure(selection.selectionSet, field ? getNamedType(field.type) : undefined, childMultiplier, depth + 1, fragmentsOnPath);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          const typed = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : parent;
          inner = measure(selection.selectionSet, typed ?? undefined, multiplier, depth, fragmentsOnPath);
        } else {
          const name = selection.name.value;
          // A cycle is reported by graphql's own NoFragmentCyclesRule; just stop here.
          if (fragmentsOnPath.has(name)) continue;
          let unit = fragmentMeasures.get(name);
          if (!unit) {
            const fragment = context.getFragment(name);
            if (!fragment) continue;
            const typed = schema.getType(fragment.typeCondition.name.value);
            unit = measure(fragment.selectionSet, typed ?? undefined, 1, 1, new Set([...fragmentsOnPath, name]));
            fragmentMeasures.set(name, unit);
          }
          inner = { depth: unit.depth + depth - 1, cost: unit.cost * multiplier };
        }
        deepest = Math.max(deepest, inner.depth);
        cost += inner.cost;
      }
      return { depth: deepest, cost };
    };

    return {
      OperationDefinition(operation) {
        const root: GraphQLCompositeType | null | undefined = schema.getRootType(operation.operation);
        const { depth, cost } = measure(operation.selectionSet, root ?? undefined, 1, 1, new Set());
        const name = operation.name ? ` "${operation.name.value}"` : "";
        if (depth > limits.maxDepth) {
          context.reportError(
            new GraphQLError(`Operation${name} is ${depth} levels deep; the limit is ${limits.maxDepth}`, {
              nodes: [operation],
              extensions: { limit: DEPTH_LIMIT, depth, maxDepth: limits.maxDepth },
            }),
          );
        }
        if (cost > limits.maxCost) {
          context.reportError(
            new GraphQLError(`Operation${name} costs ${cost}; the limit is ${limits.maxCost}`, {
              nodes: [operation],
              extensions: { limit: COST_LIMIT, cost, maxCost: limits.maxCost },
            }),
          );
        }
      },
    };
  };
}
