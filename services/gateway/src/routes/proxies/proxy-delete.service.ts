import type { z } from "zod";
import { buildProxyWhere, emptyFilters, filtersFromBulkRequest, ProxyFilterError, type ProxyFilters } from "./proxy-filter.js";
import type { SqlPool } from "./proxy.repository.js";
import { deleteModeASchema, deleteModeBSchema } from "./proxy.schema.js";

/**
 * DELETE /api/proxies (DESIGN.md "Proxies"): what a body means, decided
 * before anything is deleted. Mode A is a JSON array of ids. Mode B's
 * `scope` is `selected` (the listed ids, intersected with the filter fields
 * exactly as export applies them) or `all` (everything matching the filter; the ids are
 * ignored). A missing scope with ids means `selected`; deleting without ids
 * needs `scope: "all"`. An empty selection is refused, never widened.
 */
export function deleteFiltersOf(body: unknown): ProxyFilters {
  if (Array.isArray(body)) {
    const ids = parse(deleteModeASchema, body);
    if (ids.length === 0) throw new ProxyFilterError("No proxies selected");
    return { ...emptyFilters(), ids: [...new Set(ids)] };
  }
  if (typeof body !== "object" || body === null) throw new ProxyFilterError("Expected a JSON array of proxy ids or a delete object");
  const request = parse(deleteModeBSchema, body);
  const listed = request.proxies ?? [];
  const scope = request.scope ?? (listed.length > 0 ? "selected" : null);
  if (scope === null) throw new ProxyFilterError('Give proxy ids, or scope "all" to delete every proxy matching the filter');
  if (scope === "selected") {
    if (listed.length === 0) throw new ProxyFilterError("No proxies selected");
    // As in export: proxyStatus and reputationLabels always apply, the
    // protocol and timing fields only with `filter: true`.
    return filtersFromBulkRequest(request, { ids: true });
  }
  return filtersFromBulkRequest(request, { ids: false });
}

function parse<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
    throw new ProxyFilterError(`${where}${issue?.message ?? "invalid delete request"}`);
  }
  return parsed.data;
}

/** Deletes the user's matching proxies (their protocol status, reputations and source links cascade). */
export async function deleteProxies(pool: SqlPool, userId: number, filters: ProxyFilters): Promise<number> {
  const where = buildProxyWhere(userId, filters);
  const result = await pool.query(`DELETE FROM proxies p WHERE ${where.text}`, where.params);
  return result.rowCount ?? 0;
}

/** The contract's JSON string answer. */
export function deleteMessage(deleted: number): string {
  return deleted > 0 ? `Deleted ${deleted} proxies.` : "No proxies matched the delete criteria.";
}
