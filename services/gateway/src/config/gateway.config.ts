import { availableParallelism } from "node:os";
import { z } from "zod";
import { databaseLimitsEnv, envBool, envInt, envList, envLogLevel, envNodeEnv, envOptionalBool, envOptionalString, envOptionalUrl, envString, loadConfig } from "@roost/config";

/** API_PAGE_QUERY_CONCURRENCY's default: twice the CPU cores, at least 2. */
export const DEFAULT_PAGE_QUERY_CONCURRENCY = Math.max(2, 2 * availableParallelism());

/**
 * Every variable the gateway reads. README documents each one (a test checks
 * that it names them all). Units are in the names or the comments.
 */
export const gatewayEnvSchema = z
  .object({
    NODE_ENV: envNodeEnv,
    /** HTTP port; 8080. */
    PORT: envInt(8080, 0, 65535),
    /** Interface to bind; 127.0.0.1 so nothing is exposed by accident. */
    HOST: envString("127.0.0.1"),
    /** Where generated secrets, embedded databases and keys live. */
    DATA_DIR: envString("./.data"),
    DATABASE_URL: envOptionalString(),
    ...databaseLimitsEnv,
    REDIS_URL: envOptionalString(),
    /** Prefix of every Redis key and BullMQ queue; lets deployments share a Redis. */
    QUEUE_PREFIX: envString("roost"),
    LOG_LEVEL: envLogLevel(),
    /** Comma-separated browser origins allowed by CORS; none by default. */
    CORS_ALLOWED_ORIGINS: envList(),
    /** CIDRs of reverse proxies whose X-Forwarded-For is believed; none by default. */
    TRUSTED_PROXY_CIDRS: envList(),
    ALLOW_PRIVATE_NETWORK_TARGETS: envBool(false),
    /** The page named in the user agent of robots.txt checks (the scraper's own variable, read here too); unset = none. */
    SCRAPER_PROJECT_URL: envOptionalUrl(["http:", "https:"]),
    /** Production only: serve /healthz, /readyz, /metrics to anyone; false (loopback or token only). */
    ALLOW_PUBLIC_OBSERVABILITY_ENDPOINTS: envBool(false),
    /** Production only: value of X-Observability-Token that opens /healthz, /readyz, /metrics; unset (no token opens them). */
    OBSERVABILITY_TOKEN: envOptionalString(),
    /** Release pages, the tag is appended (`https://github.com/o/r/releases/tag/`); unset: CHANGELOG.md links, else package.json `repository`. */
    RELEASES_BASE_URL: envOptionalUrl(["http:", "https:"]),
    JWT_SECRET: envOptionalString(),
    /** Token lifetime in minutes, 15..10080. */
    JWT_TTL_MINUTES: envInt(10080, 15, 10080),
    /** HMAC key of rotator passwords, the same as the rotators'; unset: one kept in DATA_DIR. */
    ROTATOR_PASSWORD_KEY: envOptionalString(),
    /** Allows rotators without auth on an instance whose listeners bind a non-loopback host (an open proxy). */
    ROTATING_PROXY_ALLOW_OPEN: envBool(false),
    AUTH_REVOCATION_FAIL_OPEN: envBool(true),
    /** Milliseconds a revocation lookup may take before Redis counts as down. */
    AUTH_REVOCATION_TIMEOUT_MS: envInt(500, 50, 10000),
    /** Deadline of every command on the queue producer connection (hand-offs from requests), ms; 2000. */
    QUEUE_HANDOFF_TIMEOUT_MS: envInt(2000, 100, 30000),
    /** Fail-open only: milliseconds an in-process "not revoked" answer is reused (revocations are broadcast at once); 0 asks Redis every time. */
    AUTH_REVOCATION_CACHE_TTL_MS: envInt(5000, 0, 60000),
    /** Defaults depend on NODE_ENV (development false/true, production true/false). */
    DISABLE_PUBLIC_REGISTRATION: envOptionalBool(),
    ENABLE_PUBLIC_FIRST_ADMIN_BOOTSTRAP: envOptionalBool(),
    /** Bytes; 10 MiB. */
    API_UPLOAD_MAX_BODY_BYTES: envInt(10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    /** Bytes; 1 MiB. */
    API_JSON_MAX_BODY_BYTES: envInt(1024 * 1024, 1024, 64 * 1024 * 1024),
    /** Seconds an upload waits for a client that sends nothing, or an export for one that reads nothing, before it is cut off (its connection freed); 30. */
    API_STREAM_STALL_SECONDS: envInt(30, 1, 3600),
    /**
     * Seconds an upload may wait in line for a database connection before a 429; 30. At most 100:
     * the server's request timeout (120 s) runs from the request's first byte, and the body still has to arrive.
     */
    API_UPLOAD_QUEUE_SECONDS: envInt(30, 1, 100),
    /**
     * List-page statements (GET /api/getProxyPage) this process runs at once; the rest wait in line.
     * Twice the CPU cores, at least 2: the point past which more statements at once only queue for the
     * cores of a PostgreSQL on the same machine (docs/benchmarks.md, item 30).
     */
    API_PAGE_QUERY_CONCURRENCY: envInt(DEFAULT_PAGE_QUERY_CONCURRENCY, 1, 1000),
    /**
     * Milliseconds a list-page statement waits for one of those places before the request is answered 503
     * (with Retry-After); 5000, as long as a request waits for a pooled connection.
     */
    API_PAGE_QUERY_WAIT_MS: envInt(5000, 1, 120_000),
    /** Bytes; 16 KiB. */
    GRAPHQL_MAX_QUERY_BYTES: envInt(16 * 1024, 256, 1024 * 1024),
    /** Deepest field nesting a GraphQL operation may have (root fields are 1); 8. */
    GRAPHQL_MAX_DEPTH: envInt(8, 1, 100),
    /** Largest static cost of a GraphQL operation (fields times list caps, docs/graphql.md); 10000. */
    GRAPHQL_MAX_COST: envInt(10_000, 1, 10_000_000),
    /** argon2id memory cost in KiB and iterations. */
    PASSWORD_HASH_MEMORY_KIB: envInt(19456, 1024, 1024 * 1024),
    PASSWORD_HASH_TIME_COST: envInt(2, 1, 20),
    RATE_LIMIT_LOGIN_PER_MINUTE: envInt(60, 1, 1_000_000),
    /** Failed logins per e-mail per 15 minutes. */
    RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL: envInt(10, 1, 1_000_000),
    /** Failed logins per IP per 15 minutes. */
    RATE_LIMIT_LOGIN_FAILURES_PER_IP: envInt(30, 1, 1_000_000),
    RATE_LIMIT_REGISTER_PER_MINUTE: envInt(20, 1, 1_000_000),
    RATE_LIMIT_FORGOT_PASSWORD_PER_MINUTE: envInt(10, 1, 1_000_000),
    /** Seconds between two forgot-password requests for one e-mail. */
    RATE_LIMIT_FORGOT_PASSWORD_EMAIL_WINDOW_SECONDS: envInt(60, 1, 86_400),
    RATE_LIMIT_RESET_PASSWORD_PER_MINUTE: envInt(20, 1, 1_000_000),
    RATE_LIMIT_RESET_PASSWORD_PER_ACCOUNT_PER_MINUTE: envInt(5, 1, 1_000_000),
    /** Token refreshes per minute per account (each one stores a revoked token id for the token's lifetime). */
    RATE_LIMIT_REFRESH_TOKEN_PER_ACCOUNT_PER_MINUTE: envInt(30, 1, 1_000_000),
    /** changePassword and deleteAccount requests together per minute per account (each runs argon2). */
    RATE_LIMIT_PASSWORD_CHECKS_PER_ACCOUNT_PER_MINUTE: envInt(10, 1, 1_000_000),
    /** Failed changePassword and deleteAccount requests together per 15 minutes per account. */
    RATE_LIMIT_PASSWORD_CHECK_FAILURES_PER_ACCOUNT: envInt(10, 1, 1_000_000),
    /** Password recovery is configured when SMTP_HOST, MAIL_FROM_ADDRESS and PUBLIC_APP_URL are all set (the mailer reads the other SMTP_* settings); else forgotPassword answers 503. */
    SMTP_HOST: envOptionalString(),
    MAIL_FROM_ADDRESS: envOptionalString(),
    /** Base URL of the web app for links in e-mails; never taken from request headers. */
    PUBLIC_APP_URL: envOptionalUrl(["http:", "https:"]),
    /** Milliseconds a request waits for a lock on (or a write to) the e-mail outbox before answering 503; 2000. */
    OUTBOX_WRITE_TIMEOUT_MS: envInt(2000, 50, 60_000),
  })
  .transform((env) => {
    const production = env.NODE_ENV === "production";
    return {
      ...env,
      DISABLE_PUBLIC_REGISTRATION: env.DISABLE_PUBLIC_REGISTRATION ?? production,
      ENABLE_PUBLIC_FIRST_ADMIN_BOOTSTRAP: env.ENABLE_PUBLIC_FIRST_ADMIN_BOOTSTRAP ?? !production,
    };
  })
  .superRefine((env, ctx) => {
    if (env.NODE_ENV === "production" && (env.JWT_SECRET === undefined || Buffer.byteLength(env.JWT_SECRET) < 32)) {
      ctx.addIssue({ code: "custom", path: ["JWT_SECRET"], message: "required in production, at least 32 bytes" });
    }
    if (env.NODE_ENV !== "production" && env.JWT_SECRET !== undefined && Buffer.byteLength(env.JWT_SECRET) < 32) {
      ctx.addIssue({ code: "custom", path: ["JWT_SECRET"], message: "must be at least 32 bytes" });
    }
  });

export type GatewayConfig = z.output<typeof gatewayEnvSchema>;

/** The only place the gateway reads the process environment. */
export function gatewayConfigFromEnv(env: Record<string, string | undefined> = process.env): GatewayConfig {
  return loadConfig(gatewayEnvSchema, env);
}
