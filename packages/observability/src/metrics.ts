import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/**
 * One registry per process (never prom-client's global one), so all-in-one
 * mode and parallel tests do not share or double-register metrics.
 */
export interface Metrics {
  readonly registry: Registry;
  readonly httpRequestsTotal: Counter<"method" | "route" | "status">;
  readonly httpRequestDurationSeconds: Histogram<"method" | "route" | "status">;
  readonly authFailuresTotal: Counter<"reason">;
  readonly rateLimitBlocksTotal: Counter<"scope">;
  /** Jobs a request meant to queue and could not (Redis away or past its deadline); the database catches up. */
  readonly queueHandoffFailuresTotal: Counter<"queue">;
  readonly rotatingProxyErrorsTotal: Counter<"reason">;
  /** Family factories for services: each name registers once per process. */
  counter<L extends string>(name: string, help: string, labelNames?: readonly L[]): Counter<L>;
  gauge<L extends string>(name: string, help: string, labelNames?: readonly L[]): Gauge<L>;
  histogram<L extends string>(name: string, help: string, labelNames?: readonly L[], buckets?: number[]): Histogram<L>;
}

export function createMetrics({ defaultMetrics = true }: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (defaultMetrics) collectDefaultMetrics({ register: registry });

  const existing = <T>(name: string): T | undefined => registry.getSingleMetric(name) as T | undefined;

  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    existing<Counter<L>>(name) ?? new Counter<L>({ name, help, labelNames, registers: [registry] });
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    existing<Gauge<L>>(name) ?? new Gauge<L>({ name, help, labelNames, registers: [registry] });
  const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[] = [], buckets?: number[]) =>
    existing<Histogram<L>>(name) ??
    new Histogram<L>({ name, help, labelNames, registers: [registry], ...(buckets ? { buckets } : {}) });

  return {
    registry,
    httpRequestsTotal: counter("svc_http_requests_total", "HTTP requests by method, route template and status", [
      "method",
      "route",
      "status",
    ]),
    httpRequestDurationSeconds: histogram(
      "svc_http_request_duration_seconds",
      "HTTP request duration in seconds by method, route template and status",
      ["method", "route", "status"],
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    ),
    authFailuresTotal: counter("svc_auth_failures_total", "Rejected authentications by reason", ["reason"]),
    rateLimitBlocksTotal: counter("svc_rate_limit_blocks_total", "Requests refused by a rate limit, by scope", ["scope"]),
    queueHandoffFailuresTotal: counter("svc_queue_handoff_failures_total", "Jobs a request could not queue (Redis unavailable or past its deadline), by queue", ["queue"]),
    rotatingProxyErrorsTotal: counter("svc_rotating_proxy_errors_total", "Rotating proxy errors by reason", ["reason"]),
    counter,
    gauge,
    histogram,
  };
}
