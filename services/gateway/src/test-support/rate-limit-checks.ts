import type { Response } from "supertest";
import type { Metrics } from "@roost/observability";

/**
 * Checks shared by the rate-limit tests: a limit's 429 as a client sees it,
 * and the counters an operator watches.
 */

/** A limit an operator would never reach in a test: the limits not under test stay out of the way. */
export const HIGH_LIMIT = "1000";

/** The value of counter `name` for the series whose `label` is `value` (0 when it has none yet). */
export async function counterValue(metrics: Metrics, name: string, label: string, value: string): Promise<number> {
  const metric = await metrics.registry.getSingleMetric(name)?.get();
  return metric?.values.find((v) => v.labels[label] === value)?.value ?? 0;
}

/** `svc_rate_limit_blocks_total{scope}`. */
export const rateLimitBlocks = (metrics: Metrics, scope: string): Promise<number> => counterValue(metrics, "svc_rate_limit_blocks_total", "scope", scope);

/** A 429 with a JSON `{error}` and a whole `Retry-After` of 1 to `maxRetryAfterSec` seconds. */
export function expect429(res: Response, maxRetryAfterSec: number): void {
  expect(res.status).toBe(429);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  expect(res.body).toEqual({ error: expect.any(String) });
  const retryAfter = Number(res.headers["retry-after"]);
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(maxRetryAfterSec);
}
