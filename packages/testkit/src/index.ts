export { createEmptyDatabase, createTestDatabase, databaseUrlFor, ensureTemplate, testServerUrl } from "./test-database.js";
export type { TestDatabase } from "./test-database.js";
export { createTestRedis, testRedisUrl } from "./test-redis.js";
export type { TestRedis } from "./test-redis.js";
export { freePort, waitFor, waitForPort } from "./wait-for.js";
export { copyOutResponse, copyOutStream, copyTail, message, RecordingWriter, written } from "./copy-frames.js";
export * from "./peers/index.js";
