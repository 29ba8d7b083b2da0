export { ConfigError, loadConfig } from "./load-config.js";
export { envLogLevel, LOG_LEVELS } from "./env-log.js";
export type { LogLevel } from "./env-log.js";
export {
  envBool,
  envInt,
  envList,
  envNodeEnv,
  envOptionalBool,
  envOptionalInt,
  envOptionalString,
  envOptionalUrl,
  envString,
} from "./env-types.js";
export { databaseLimits, databaseLimitsEnv } from "./database-limits.js";
export type { DatabaseLimitsConfig } from "./database-limits.js";
