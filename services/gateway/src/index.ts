export { gatewayConfigFromEnv, gatewayEnvSchema } from "./config/gateway.config.js";
export { adminCliEnvSchema } from "./cli/admin-cli.config.js";
export type { GatewayConfig } from "./config/gateway.config.js";
export { createApp } from "./app.js";
export { createGatewayService } from "./gateway.service.js";
export type { GatewayService } from "./gateway.service.js";
export { buildGatewayDeps } from "./gateway.wiring.js";
export type { SharedInfra } from "./gateway.wiring.js";
export type { BuildInfo, GatewayDeps, GatewayQueues } from "./gateway.deps.js";
