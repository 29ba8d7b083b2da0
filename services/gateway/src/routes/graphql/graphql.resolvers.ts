import { GraphQLError } from "graphql";
import { getDashboardInfo } from "../dashboard/dashboard.service.js";
import {
  countProxies,
  getProxyDetail,
  listProxies,
  listStatistics,
  parsePage,
  parsePageSize,
  parseProxyFilters,
  parseStatisticsLimit,
  ProxyFilterError,
  type ProxyDetail,
  type ProxyStatistic,
} from "@roost/inventory";
import { readSettings } from "../user-settings/user-settings.repository.js";
import type { UserSettingsView } from "../user-settings/user-settings.schema.js";
import { saveUserSettings } from "../user-settings/user-settings.service.js";
import type { GraphqlContext } from "./graphql.context.js";
import { SafeIntScalar } from "./graphql.scalars.js";

/** Error codes in `errors[].extensions.code` besides Apollo's own (docs/graphql.md). */
export const BAD_USER_INPUT = "BAD_USER_INPUT";
export const NOT_FOUND = "NOT_FOUND";

const badInput = (message: string, extensions: Record<string, unknown> = {}) =>
  new GraphQLError(message, { extensions: { code: BAD_USER_INPUT, ...extensions } });

/** Runs a REST parser; its ProxyFilterError becomes a BAD_USER_INPUT error with the same message. */
function userInput<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof ProxyFilterError) throw badInput(error.message);
    throw error;
  }
}

/** GraphQL numbers as the query-string values the REST parsers take. */
const asParam = (value: number | null | undefined): string | undefined =>
  value === null || value === undefined ? undefined : String(value);

interface ProxyFilterInput {
  search?: string | null;
  status?: string | null;
  protocol?: string[] | null;
  country?: string[] | null;
  type?: string[] | null;
  anonymity?: string[] | null;
  reputation?: string[] | null;
  maxTimeout?: number | null;
  maxRetries?: number | null;
}

interface ProxiesArgs {
  page: number;
  pageSize?: number | null;
  filter?: ProxyFilterInput | null;
}

async function settingsOf({ db, auth }: GraphqlContext): Promise<UserSettingsView> {
  const settings = await readSettings(db.prisma, auth.userId);
  if (!settings) throw new GraphQLError("User not found", { extensions: { code: NOT_FOUND } });
  return settings;
}

/**
 * Resolvers call the same services and repositories as the REST routes, so
 * both faces of the API validate and answer alike. They reach the database
 * only through the context's `db`, which runs at most GRAPHQL_DB_CONCURRENCY
 * statements of the operation at once (graphql.context.ts).
 */
export const resolvers = {
  SafeInt: SafeIntScalar,

  Query: {
    viewer: (_parent: unknown, _args: unknown, { auth }: GraphqlContext) => ({ user_id: auth.userId, role: auth.role }),
    dashboard: (_parent: unknown, _args: unknown, { db, auth }: GraphqlContext) => getDashboardInfo(db, auth.userId),
    proxyCount: (_parent: unknown, _args: unknown, { db, auth }: GraphqlContext) => countProxies(db, auth.userId),
    proxies(_parent: unknown, args: ProxiesArgs, { db, auth }: GraphqlContext) {
      const filter = args.filter ?? {};
      const { page, pageSize, filters } = userInput(() => ({
        page: parsePage(String(args.page)),
        pageSize: parsePageSize(asParam(args.pageSize)),
        filters: parseProxyFilters({
          search: filter.search ?? undefined,
          status: filter.status ?? undefined,
          protocol: filter.protocol ?? undefined,
          country: filter.country ?? undefined,
          type: filter.type ?? undefined,
          anonymity: filter.anonymity ?? undefined,
          reputation: filter.reputation ?? undefined,
          maxTimeout: asParam(filter.maxTimeout),
          maxRetries: asParam(filter.maxRetries),
        }),
      }));
      return listProxies(db.pages, auth.userId, filters, page, pageSize);
    },
    /** Another user's id answers null, exactly like an unknown id (no existence oracle). */
    proxy: (_parent: unknown, args: { id: number }, { db, auth }: GraphqlContext) =>
      args.id >= 1 ? getProxyDetail(db, auth.userId, args.id) : null,
  },

  ProxyDetail: {
    async statistics(parent: ProxyDetail, args: { limit?: number | null }, { db, auth }: GraphqlContext): Promise<ProxyStatistic[]> {
      const limit = userInput(() => parseStatisticsLimit(asParam(args.limit)));
      // The proxy was the caller's a moment ago; deleted since means no statistics.
      return (await listStatistics(db, auth.userId, parent.id, limit)) ?? [];
    },
  },

  Viewer: {
    settings: (_parent: unknown, _args: unknown, context: GraphqlContext) => settingsOf(context),
  },

  Mutation: {
    /** POST /api/user/settings' rules: zod ranges, then the website blacklist on judge URLs. */
    async updateUserSettings(_parent: unknown, args: { input: unknown }, context: GraphqlContext): Promise<UserSettingsView> {
      const { deps, auth, db } = context;
      // The transaction holds one connection throughout: one slot, its statements not limited again.
      const rejection = await db.asOneCall((database) =>
        saveUserSettings({ db: database, globalConfig: deps.globalConfig }, auth.userId, args.input),
      );
      if (rejection) throw badInput(rejection.message, rejection.extra);
      return settingsOf(context);
    },
  },
};
