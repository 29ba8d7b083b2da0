export { createCheckerService } from "./checker.service.js";
export type { CheckerDeps, CheckerService } from "./checker.service.js";
export { checkerConfigFromEnv, checkerEnvSchema, checkerInfraFromEnv, checkerInfraSchema } from "./config/checker.config.js";
export type { CheckerConfig } from "./config/checker.config.js";
