export { ConfigError, loadConfig } from "./load-config.js";
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
