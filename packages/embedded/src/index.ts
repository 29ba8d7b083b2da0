export { embeddedPostgresUrl, startEmbeddedPostgres } from "./embedded-postgres.js";
export type { EmbeddedPostgresHandle, EmbeddedPostgresOptions } from "./embedded-postgres.js";
export { LOCAL_REDIS_DEFAULT_MAX_MEMORY_BYTES, localRedisUrl, REDIS_SERVER_MISSING_MESSAGE, startLocalRedis } from "./local-redis.js";
export type { LocalRedisHandle, LocalRedisOptions } from "./local-redis.js";
export type { EmbeddedLogger } from "./embedded-logger.js";
