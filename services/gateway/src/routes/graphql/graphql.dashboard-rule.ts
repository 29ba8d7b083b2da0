import { GraphQLError, Kind, type SelectionSetNode, type ValidationContext, type ValidationRule } from "graphql";

/** `extensions.limit` of the violation, beside the depth, cost and fields limits. */
export const DASHBOARD_LIMIT = "dashboard";
export const DASHBOARD_MESSAGE = "At most one dashboard field per operation";

/** Root `dashboard` fields of a selection set, through inline fragments and fragment spreads (each spread name once). */
function countDashboards(context: ValidationContext, selectionSet: SelectionSetNode, spread: Set<string>): number {
  let count = 0;
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      if (selection.name.value === "dashboard") count++;
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      count += countDashboards(context, selection.selectionSet, spread);
    } else if (!spread.has(selection.name.value)) {
      spread.add(selection.name.value);
      const fragment = context.getFragment(selection.name.value);
      if (fragment) count += countDashboards(context, fragment.selectionSet, spread);
    }
  }
  return count;
}

/**
 * `Query.dashboard` runs four aggregate queries and the cost rule cannot
 * price aliases of it low enough to matter, so an operation selects it at
 * most once; a second (an alias, a fragment) is a validation error (HTTP 400).
 */
export const oneDashboardRule: ValidationRule = (context) => ({
  OperationDefinition(operation) {
    if (operation.operation !== "query") return;
    if (countDashboards(context, operation.selectionSet, new Set()) > 1) {
      context.reportError(
        new GraphQLError(DASHBOARD_MESSAGE, { nodes: [operation], extensions: { limit: DASHBOARD_LIMIT } }),
      );
    }
  },
});
