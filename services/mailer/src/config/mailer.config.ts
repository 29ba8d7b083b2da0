import { z } from "zod";
import { databaseLimitsEnv, envBool, envInt, envLogLevel, envNodeEnv, envOptionalBool, envOptionalInt, envOptionalString, envOptionalUrl, envString, loadConfig } from "@roost/config";

/** A secret keeps its spaces (no trim); empty or unset is "not set". */
const envOptionalSecret = () =>
  z
    .string()
    .optional()
    .transform((value) => (value === undefined || value === "" ? undefined : value));

/**
 * Every variable the mailer reads (connection settings for running alone are
 * in `mailerInfraSchema`). Units are in the names or the comments.
 */
export const mailerEnvSchema = z
  .object({
    /** Prefix of the `mail` wake-up queue; must match the gateway's. */
    QUEUE_PREFIX: envString("roost"),
    /** SMTP relay host. Recovery is configured when SMTP_HOST, MAIL_FROM_ADDRESS and PUBLIC_APP_URL are all set. */
    SMTP_HOST: envOptionalString(),
    /** Default 465 when SMTP_SECURE is true, else 587. */
    SMTP_PORT: envOptionalInt(1, 65535),
    /** true: TLS from the first byte (port 465). false: plain, upgraded with STARTTLS when the server offers it. */
    SMTP_SECURE: envBool(false),
    /**
     * With SMTP_SECURE=false: refuse to send unless the server upgrades with STARTTLS, so a
     * man in the middle cannot strip it. Default true, false when SMTP_HOST is a loopback address.
     */
    SMTP_REQUIRE_TLS: envOptionalBool(),
    /** SMTP AUTH user and password, set both or neither. */
    SMTP_USERNAME: envOptionalString(),
    SMTP_PASSWORD: envOptionalSecret(),
    /** Seconds each SMTP stage (connect, greeting, idle socket) may take; 30. */
    SMTP_TIMEOUT_SECONDS: envInt(30, 1, 600),
    MAIL_FROM_ADDRESS: envOptionalString(),
    /** Display name of the sender; "Roost". */
    MAIL_FROM_NAME: envString("Roost"),
    /** Base URL of the web app; reset links are {PUBLIC_APP_URL}/reset-password?token=… (never built from request headers). */
    PUBLIC_APP_URL: envOptionalUrl(["http:", "https:"]),
    /** Minutes a reset link stays valid, counted from when it is sent; 30 (5..1440). */
    PASSWORD_RESET_TOKEN_TTL_MINUTES: envInt(30, 5, 1440),
    /** Rows claimed per round trip; 20. */
    MAILER_BATCH_SIZE: envInt(20, 1, 500),
    /** Messages one mailer process sends at once; 2. */
    MAILER_CONCURRENCY: envInt(2, 1, 32),
    /** Seconds between outbox polls (wake-ups on the `mail` queue come sooner); 5. */
    MAILER_POLL_INTERVAL_SECONDS: envInt(5, 1, 3600),
    /** Send attempts per message before it is marked failed; 8. */
    MAILER_MAX_ATTEMPTS: envInt(8, 1, 100),
    /** Back-off after the first failed attempt in seconds, doubled per attempt; 30. */
    MAILER_RETRY_BASE_SECONDS: envInt(30, 1, 86_400),
    /** Longest back-off in seconds; 3600. */
    MAILER_RETRY_MAX_SECONDS: envInt(3600, 1, 604_800),
    /** Seconds a claimed message stays locked to one mailer; after that a crashed mailer's messages are claimed again; 120. */
    MAILER_LEASE_SECONDS: envInt(120, 5, 3600),
    /** Days finished (sent, dropped, failed) outbox rows are kept; 7. */
    MAILER_RETENTION_DAYS: envInt(7, 1, 3650),
  })
  .superRefine((env, ctx) => {
    const required = ["SMTP_HOST", "MAIL_FROM_ADDRESS", "PUBLIC_APP_URL"] as const;
    if (required.some((key) => env[key] !== undefined)) {
      for (const key of required) {
        if (env[key] === undefined) {
          ctx.addIssue({
            code: "custom",
            path: [key],
            message: `required when any of ${required.join(", ")} is set (password recovery needs all three)`,
          });
        }
      }
    }
    if (env.MAIL_FROM_ADDRESS !== undefined && !z.email().safeParse(env.MAIL_FROM_ADDRESS).success) {
      ctx.addIssue({ code: "custom", path: ["MAIL_FROM_ADDRESS"], message: `not an e-mail address: "${env.MAIL_FROM_ADDRESS}"` });
    }
    if ((env.SMTP_USERNAME === undefined) !== (env.SMTP_PASSWORD === undefined)) {
      const missing = env.SMTP_USERNAME === undefined ? "SMTP_USERNAME" : "SMTP_PASSWORD";
      ctx.addIssue({ code: "custom", path: [missing], message: "SMTP_USERNAME and SMTP_PASSWORD are set together or not at all" });
    }
    // One send may spend the connect, greeting and idle-socket timeouts; the
    // lease must outlast it or another mailer could claim the row mid-send.
    if (env.MAILER_LEASE_SECONDS <= 3 * env.SMTP_TIMEOUT_SECONDS) {
      ctx.addIssue({
        code: "custom",
        path: ["MAILER_LEASE_SECONDS"],
        message: `must be more than 3 × SMTP_TIMEOUT_SECONDS (${3 * env.SMTP_TIMEOUT_SECONDS})`,
      });
    }
    if (env.MAILER_RETRY_MAX_SECONDS < env.MAILER_RETRY_BASE_SECONDS) {
      ctx.addIssue({ code: "custom", path: ["MAILER_RETRY_MAX_SECONDS"], message: "must be at least MAILER_RETRY_BASE_SECONDS" });
    }
  })
  .transform((env) => {
    const smtp: SmtpSettings | null =
      env.SMTP_HOST !== undefined && env.MAIL_FROM_ADDRESS !== undefined && env.PUBLIC_APP_URL !== undefined
        ? {
            host: env.SMTP_HOST,
            port: env.SMTP_PORT ?? (env.SMTP_SECURE ? 465 : 587),
            secure: env.SMTP_SECURE,
            requireTls: env.SMTP_REQUIRE_TLS ?? !isLoopbackHost(env.SMTP_HOST),
            auth:
              env.SMTP_USERNAME !== undefined && env.SMTP_PASSWORD !== undefined
                ? { user: env.SMTP_USERNAME, pass: env.SMTP_PASSWORD }
                : null,
            timeoutMs: env.SMTP_TIMEOUT_SECONDS * 1000,
            fromAddress: env.MAIL_FROM_ADDRESS,
            fromName: env.MAIL_FROM_NAME,
            publicAppUrl: env.PUBLIC_APP_URL,
          }
        : null;
    return { ...env, smtp };
  });

/** `localhost`, 127.0.0.0/8 or ::1: a relay on this machine, where nobody sits in between. */
export function isLoopbackHost(host: string): boolean {
  const name = host.toLowerCase().replace(/^\[|\]$/g, "");
  return name === "localhost" || name.endsWith(".localhost") || name === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

/** What the mailer needs to send; null when password recovery is not configured. */
export interface SmtpSettings {
  host: string;
  port: number;
  secure: boolean;
  /** Plain connections (secure false) must be upgraded with STARTTLS before anything is sent. */
  requireTls: boolean;
  auth: { user: string; pass: string } | null;
  timeoutMs: number;
  fromAddress: string;
  fromName: string;
  publicAppUrl: string;
}

export type MailerConfig = z.output<typeof mailerEnvSchema>;

/** The only place the mailer reads the process environment. */
export function mailerConfigFromEnv(env: Record<string, string | undefined> = process.env): MailerConfig {
  return loadConfig(mailerEnvSchema, env);
}

/** Connection settings when the mailer runs alone (all-in-one passes its own). */
export const mailerInfraSchema = z.object({
  DATABASE_URL: envOptionalString(),
  ...databaseLimitsEnv,
  REDIS_URL: envOptionalString(),
  /** Checked as the gateway checks it: a value other than development, production or test stops the boot. */
  NODE_ENV: envNodeEnv,
  LOG_LEVEL: envLogLevel(),
  /** Port for /metrics and /healthz when the mailer runs alone; unset = no listener. */
  MAILER_METRICS_PORT: envOptionalInt(0, 65535),
  /** Interface for that listener; 127.0.0.1. */
  MAILER_METRICS_HOST: envString("127.0.0.1"),
});

export type MailerInfra = z.output<typeof mailerInfraSchema>;

export function mailerInfraFromEnv(env: Record<string, string | undefined> = process.env): MailerInfra {
  return loadConfig(mailerInfraSchema, env);
}
