import type { z } from "zod";

/** One readable line from a zod error: `timeout: Too big: expected number to be <=60000`. */
export function zodMessage(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
    .join("; ");
}
