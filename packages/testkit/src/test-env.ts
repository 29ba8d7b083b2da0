/** Where the shared test servers are; override to point tests elsewhere. */
export const testServerUrl = process.env.TEST_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
export const testRedisUrl = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
