export { defaultGlobalConfig, globalConfigSchema, judgeSchema } from "./global-config.schema.js";
export type { GlobalConfig } from "./global-config.schema.js";
export { createGlobalConfigStore } from "./global-config.store.js";
export type { ConfigGuard, ConfigListener, GlobalConfigStore, GlobalConfigStoreOptions, UpdateResult } from "./global-config.store.js";
export { deepMerge, isPlainObject } from "./deep-merge.js";
export { isBlockedUrl } from "./website-blacklist.js";
