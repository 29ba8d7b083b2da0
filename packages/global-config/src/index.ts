export { defaultGlobalConfig, globalConfigSchema, judgeSchema } from "./global-config.schema.js";
export type { GlobalConfig } from "./global-config.schema.js";
export { createGlobalConfigStore, describeIssue, parseStoredConfig } from "./global-config.store.js";
export type {
  ConfigGuard,
  ConfigListener,
  GlobalConfigStore,
  GlobalConfigStoreOptions,
  SavedListener,
  StoreLogger,
  UpdateResult,
} from "./global-config.store.js";
export { deepMerge, isPlainObject, pickKnownKeys } from "./deep-merge.js";
export { isBlockedUrl, normalizeBlacklistEntry } from "./website-blacklist.js";
export { findBlockedUrls, hasBlockedUrls } from "./blocked-urls.js";
export type { BlockedUrls } from "./blocked-urls.js";
export { compileJudgeRegex, JudgeRegexError, judgeRegexProblem } from "./judge-regex.js";
export { geoLiteUpdateWanted } from "./geolite-trigger.js";
