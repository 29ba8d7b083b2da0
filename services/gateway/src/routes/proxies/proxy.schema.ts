import { z } from "zod";
import { emptyFilters, filtersFromBulkRequest, ProxyFilterError, REPUTATION_LABELS, type ProxyFilters } from "@roost/inventory";

/** Most ids one export or delete request may list. */
export const MAX_REQUEST_IDS = 1_000_000;

const id = z.number().int().positive().max(2_147_483_647);
const ids = z.array(id).max(MAX_REQUEST_IDS);
const nonNegative = z.number().int().min(0).max(2_147_483_647);

/**
 * The filter part shared by the export request and delete Mode B (contract "Export request"). Booleans and numbers
 * act only with `filter: true`; `proxyStatus` and `reputationLabels` always; `proxies` restricts to those ids.
 * Nulls are accepted as "absent" (clients send them).
 */
export const bulkFilterSchema = z.object({
  proxies: ids.nullish(),
  filter: z.boolean().nullish(),
  http: z.boolean().nullish(),
  https: z.boolean().nullish(),
  socks4: z.boolean().nullish(),
  socks5: z.boolean().nullish(),
  maxRetries: nonNegative.nullish(),
  /** Milliseconds; 0 means no limit. */
  maxTimeout: nonNegative.nullish(),
  proxyStatus: z.enum(["all", "alive", "dead"]).nullish(),
  reputationLabels: z.array(z.enum(REPUTATION_LABELS)).max(REPUTATION_LABELS.length * 4).nullish(),
});

export const exportRequestSchema = bulkFilterSchema.extend({
  /** A template (docs/proxies.md), `json` or `csv`; default `ip:port`. */
  outputFormat: z.string().max(1000).nullish(),
});
export type ExportRequest = z.output<typeof exportRequestSchema>;

/** Delete Mode A: a JSON array of ids. */
export const deleteModeASchema = ids;

/**
 * Delete Mode B: the filter object plus `scope`. Strict, unlike export's: a
 * misspelled filter (`status` for `proxyStatus`) beside `scope: "all"` would
 * otherwise be dropped and the delete widened to every proxy of the caller.
 */
export const deleteModeBSchema = bulkFilterSchema
  .extend({
    scope: z.enum(["selected", "all"]).nullish(),
  })
  .strict();
export type DeleteModeB = z.output<typeof deleteModeBSchema>;

/**
 * DELETE /api/proxies: what a body means, decided before anything is deleted. Mode A is a JSON array of ids. Mode B's
 * `scope` is `selected` (the listed ids within the filter, as export applies it) or `all` (all matching; ids ignored);
 * no scope with ids means `selected`, no ids needs `scope: "all"`. An empty selection is refused, never widened.
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
