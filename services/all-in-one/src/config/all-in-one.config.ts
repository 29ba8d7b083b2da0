import { z } from "zod";
import { databaseLimitsEnv, envInt, envLogLevel, envNodeEnv, envOptionalString, envString, loadConfig } from "@roost/config";

/** Roles this build can run; SERVICES selects a subset (default: all). */
export const SERVICE_ROLES = ["gateway", "maintenance", "mailer", "checker", "rotator", "scraper"] as const;
export type ServiceRole = (typeof SERVICE_ROLES)[number];

export const allInOneEnvSchema = z
  .object({
    /** Checked here too, so a production start with a bad JWT_SECRET stops before any embedded server starts. */
    NODE_ENV: envNodeEnv,
    JWT_SECRET: envOptionalString(),
    /** Comma-separated roles to run in this process; default every role. */
    SERVICES: z
      .string()
      .optional()
      .transform((value, ctx): ServiceRole[] => {
        if (value === undefined || value.trim() === "" || value.trim() === "all") return [...SERVICE_ROLES];
        const roles = value.split(",").map((r) => r.trim()).filter(Boolean);
        const unknown = roles.filter((r) => !(SERVICE_ROLES as readonly string[]).includes(r));
        if (unknown.length > 0) {
          ctx.addIssue({ code: "custom", message: `unknown role(s) ${unknown.join(", ")}; known: ${SERVICE_ROLES.join(", ")}` });
          return z.NEVER;
        }
        return [...new Set(roles)] as ServiceRole[];
      }),
    DATA_DIR: envString("./.data"),
    /** Unset: an embedded PostgreSQL is started under DATA_DIR. */
    DATABASE_URL: envOptionalString(),
    ...databaseLimitsEnv,
    /** Unset: redis-server from PATH is started under DATA_DIR. */
    REDIS_URL: envOptionalString(),
    /** `maxmemory` of that local redis-server (policy noeviction); default 1 GiB, at least 64 MiB. */
    LOCAL_REDIS_MAX_MEMORY_BYTES: envInt(1024 * 1024 * 1024, 64 * 1024 * 1024, Number.MAX_SAFE_INTEGER),
    LOG_LEVEL: envLogLevel(),
    /** `pretty` for a terminal, `json` for log collectors; default json. */
    LOG_FORMAT: z.enum(["json", "pretty"]).default("json"),
  })
  .superRefine((env, ctx) => {
    // The gateway's own rule (gateway.config.ts), applied before PostgreSQL and Redis are started.
    if (env.SERVICES.includes("gateway") && env.NODE_ENV === "production" && (env.JWT_SECRET === undefined || Buffer.byteLength(env.JWT_SECRET) < 32)) {
      ctx.addIssue({ code: "custom", path: ["JWT_SECRET"], message: "required in production, at least 32 bytes" });
    }
  });

export type AllInOneConfig = z.output<typeof allInOneEnvSchema>;

export function allInOneConfigFromEnv(env: Record<string, string | undefined> = process.env): AllInOneConfig {
  return loadConfig(allInOneEnvSchema, env);
}

/** The environment each service's own schema parses: the process env plus the URLs chosen here. */
export function serviceEnv(databaseUrl: string, redisUrl: string, env: Record<string, string | undefined> = process.env) {
  return { ...env, DATABASE_URL: databaseUrl, REDIS_URL: redisUrl };
}
