export { createRotatorService } from "./rotator.service.js";
export type { RotatorDeps, RotatorService } from "./rotator.service.js";
export { rotatorConfigFromEnv, rotatorEnvSchema, rotatorInfraFromEnv, rotatorInfraSchema } from "./config/rotator.config.js";
export type { RotatorConfig } from "./config/rotator.config.js";
