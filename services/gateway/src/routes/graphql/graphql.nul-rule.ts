import { GraphQLError, type ValidationRule } from "graphql";
import { NUL_MESSAGE } from "../../http/nul-guard.js";

/**
 * A NUL (U+0000) in a string literal of the document is a validation error
 * (HTTP 400), as a NUL anywhere in a REST request is. A document writes it as
 * the escape `\u0000` or `\u{0}`, which JSON carries as `\\u0000`, so the
 * body's own NUL check rightly lets it through; PostgreSQL cannot hold U+0000
 * in text, and the value failed there as a masked 500. Variables need no rule
 * here: a NUL in them is an escape in the JSON body, which the body parser
 * refuses first (json-body.middleware.ts). Default values and directive
 * arguments are string literals too.
 */
export const noNulInStringsRule: ValidationRule = (context) => ({
  StringValue(node) {
    if (node.value.includes("\u0000")) context.reportError(new GraphQLError(NUL_MESSAGE, { nodes: [node] }));
  },
});
