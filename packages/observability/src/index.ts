export { createLogger } from "./logger.js";
export type { Logger, LoggerOptions } from "./logger.js";
export { createMetrics } from "./metrics.js";
export type { Metrics } from "./metrics.js";
export { createHealthRegistry } from "./health.js";
export type { ComponentHealth, ComponentStatus, HealthCheck, HealthRegistry, ReadinessReport } from "./health.js";
export { startMetricsListener } from "./metrics-listener.js";
export type { MetricsListener } from "./metrics-listener.js";
