import { z } from "zod";
import { envLogLevel, envOptionalString, envString, loadConfig } from "@roost/config";

/** Roles this build can run; SERVICES selects a subset (default: all). */
export const SERVICE_ROLES = ["gateway", "maintenance", "mailer", "checker", "scraper"] as const;
export type ServiceRole = (typeof SERVICE_ROLES)[number];

export const allInOneEnvSchema = z.object({
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
  /** Unset: redis-server from PATH is started under DATA_DIR. */
  REDIS_URL: envOptionalString(),
  LOG_LEVEL: envLogLevel(),
  /** `pretty` for a terminal, `json` for log collectors; default json. */
  LOG_FORMAT: z.enum(["json", "pretty"]).default("json"),
});

export type AllInOneConfig = z.output<typeof allInOneEnvSchema>;

export function allInOneConfigFromEnv(env: Record<string, string | undefined> = process.env): AllInOneConfig {
  return loadConfig(allInOneEnvSchema, env);
}

/** The environment each service's own schema parses: the process env plus the URLs chosen here. */
export function serviceEnv(databaseUrl: string, redisUrl: string, env: Record<string, string | undefined> = process.env) {
  return { ...env, DATABASE_URL: databaseUrl, REDIS_URL: redisUrl };
}
