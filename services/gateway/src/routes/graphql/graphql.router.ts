import { ApolloServer } from "@apollo/server";
import { unwrapResolverError } from "@apollo/server/errors";
import {
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from "@apollo/server/plugin/disabled";
import { expressMiddleware } from "@as-integrations/express5";
import { Router, type RequestHandler } from "express";
import { databaseUnavailable, isDatabaseUnavailable } from "@roost/db";
import { GraphQLError, type GraphQLFormattedError } from "graphql";
import type { Logger } from "@roost/observability";
import type { GatewayDeps } from "../../gateway.deps.js";
import { authOf } from "../../http/auth.middleware.js";
import type { Guards } from "../../http/guards.js";
import { jsonBodyParser } from "../../http/json-body.middleware.js";
import { rejectNulInUrl } from "../../http/nul-guard.js";
import { CallerGone } from "../../db-limits/statement-limiter.js";
import { badRequest, HttpError } from "../../http/http-error.js";
import { createGraphqlContext, type GraphqlContext } from "./graphql.context.js";
import type { PageStatements } from "../../db-limits/page-statements.js";
import { MAX_QUERY_FIELDS, MAX_QUERY_TOKENS, queryFieldsError, queryLimitsRule, type QueryLimits } from "./graphql.limits.js";
import { oneDashboardRule } from "./graphql.dashboard-rule.js";
import { noNulInStringsRule } from "./graphql.nul-rule.js";
import { resolvers } from "./graphql.resolvers.js";
import { typeDefs } from "./graphql.schema.js";

/**
 * Weights of the cost rule (docs/graphql.md): root fields that run several
 * queries cost more; list caps are the server-side maxima.
 */
export const FIELD_COSTS: Record<string, number> = {
  "Query.dashboard": 50,
  "Query.proxies": 20,
  "Query.proxy": 10,
  "Query.proxyCount": 5,
  "ProxyDetail.statistics": 10,
};
export const LIST_SIZES: Record<string, number> = {
  "ProxyPage.proxies": 100,
  "ProxyDetail.statistics": 500,
  "Dashboard.country_breakdown": 250,
  "Dashboard.judge_valid_proxies": 100,
  "UserSettings.judges": 100,
};

const STATUS_CODES: Record<number, string> = { 400: "BAD_USER_INPUT", 403: "FORBIDDEN", 404: "NOT_FOUND", 409: "CONFLICT", 503: "SERVICE_UNAVAILABLE" };

/**
 * HttpErrors thrown by shared services keep their message and become a
 * GraphQL error code; anything unexpected is logged and masked.
 */
function formatError(logger: Logger): (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError {
  return (formatted, error) => {
    const original = unwrapResolverError(error);
    if (original instanceof HttpError) {
      const code = STATUS_CODES[original.status] ?? "INTERNAL_SERVER_ERROR";
      return { ...formatted, message: original.message, extensions: { ...original.extra, code } };
    }
    // A statement skipped because the client had gone: the answer reaches nobody, and nothing went wrong.
    if (original instanceof GraphQLError || original instanceof CallerGone || formatted.extensions?.code !== "INTERNAL_SERVER_ERROR") return formatted;
    // A database that did not answer in time is the REST 503's SERVICE_UNAVAILABLE, not an internal error.
    if (isDatabaseUnavailable(original)) {
      return { message: databaseUnavailable.message, locations: formatted.locations, path: formatted.path, extensions: { code: "SERVICE_UNAVAILABLE" } };
    }
    logger.error("graphql resolver error", { error: original, path: formatted.path });
    return { message: "Internal server error", locations: formatted.locations, path: formatted.path, extensions: { code: "INTERNAL_SERVER_ERROR" } };
  };
}

/** 400 `{error}` for a body that is not one operation object; 413 `{error}` when its `query` is longer than GRAPHQL_MAX_QUERY_BYTES. */
function queryBytesGuard(maxBytes: number): RequestHandler {
  return (req, _res, next) => {
    const body: unknown = req.body;
    // Batches are off (allowBatchedHttpRequests): an array is refused here, in the gateway's own shape.
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw badRequest("Expected a JSON object with one GraphQL operation: {query, variables?, operationName?}");
    }
    const query: unknown = (body as { query?: unknown }).query;
    if (typeof query === "string" && Buffer.byteLength(query, "utf8") > maxBytes) {
      throw new HttpError(413, `GraphQL query exceeds ${maxBytes} bytes`);
    }
    next();
  };
}

/**
 * 400 GraphQL `{errors}` for a query with more than MAX_QUERY_FIELDS fields.
 * Apollo runs the validation rules in one pass, so a rule could report the
 * count but not spare graphql-js's pairwise field comparison; this check
 * runs before Apollo, on a second parse bounded by MAX_QUERY_TOKENS.
 */
function queryFieldsGuard(): RequestHandler {
  return (req, res, next) => {
    const query: unknown = (req.body as { query?: unknown }).query;
    const error = typeof query === "string" ? queryFieldsError(query, { maxTokens: MAX_QUERY_TOKENS, maxFields: MAX_QUERY_FIELDS }) : undefined;
    if (error) {
      res.status(400).json({ errors: [error.toJSON()] });
      return;
    }
    next();
  };
}

export function createGraphqlServer(deps: GatewayDeps): ApolloServer<GraphqlContext> {
  const production = deps.config.NODE_ENV === "production";
  const limits: QueryLimits = {
    maxDepth: deps.config.GRAPHQL_MAX_DEPTH,
    maxCost: deps.config.GRAPHQL_MAX_COST,
    fieldCosts: FIELD_COSTS,
    listSizes: LIST_SIZES,
  };
  return new ApolloServer<GraphqlContext>({
    typeDefs,
    resolvers,
    nodeEnv: deps.config.NODE_ENV,
    introspection: !production,
    hideSchemaDetailsFromClientErrors: production,
    includeStacktraceInErrorResponses: false,
    // Full query text every time: a hash-only request could not be size-checked.
    persistedQueries: false,
    allowBatchedHttpRequests: false,
    // The process's shutdown coordinator owns signals (STYLE.md rule 6).
    stopOnTerminationSignals: false,
    // The parser stops past MAX_QUERY_TOKENS, so no larger document reaches validation (graphql.limits.ts).
    parseOptions: { maxTokens: MAX_QUERY_TOKENS },
    validationRules: [queryLimitsRule(limits), noNulInStringsRule, oneDashboardRule],
    formatError: formatError(deps.logger),
    logger: {
      debug: (message: string) => deps.logger.debug("apollo", { message }),
      info: (message: string) => deps.logger.info("apollo", { message }),
      warn: (message: string) => deps.logger.warn("apollo", { message }),
      error: (message: string) => deps.logger.error("apollo", { message }),
    },
    plugins: [
      ApolloServerPluginLandingPageDisabled(),
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginSchemaReportingDisabled(),
    ],
  });
}

/**
 * POST /api/graphql. Mounted before the /api JSON parser: it parses its own
 * body (API_JSON_MAX_BODY_BYTES for the whole body, GRAPHQL_MAX_QUERY_BYTES
 * for the query text, MAX_QUERY_TOKENS and MAX_QUERY_FIELDS for the
 * document). The bearer guard runs first, so 401 and 413 are `{error}`
 * bodies; GraphQL parse, validation and execution errors are `{errors}`.
 */
export function graphqlRouter(deps: GatewayDeps, { auth }: Guards, pages: PageStatements): Router {
  const server = createGraphqlServer(deps);
  // createApp is synchronous; requests wait for the start (a failed start fails them).
  server.startInBackgroundHandlingStartupErrorsByLoggingAndFailingAllRequests();
  const router = Router();
  router.post(
    "/graphql",
    auth,
    jsonBodyParser(deps.config.API_JSON_MAX_BODY_BYTES),
    rejectNulInUrl,
    queryBytesGuard(deps.config.GRAPHQL_MAX_QUERY_BYTES),
    queryFieldsGuard(),
    // A context, and so a database limiter, per operation.
    expressMiddleware(server, { context: async ({ req, res }) => createGraphqlContext(deps, pages, authOf(req), req, res) }),
  );
  return router;
}
