import { z } from "zod";
import { envOptionalString, loadConfig } from "@roost/config";

/** What the admin CLI reads besides the gateway's own variables. */
export const adminCliEnvSchema = z.object({
  /** `create`'s password when set; otherwise it is read from standard input. Never a command-line argument (ps and shell history show those). */
  ADMIN_PASSWORD: envOptionalString(),
});

export function adminCliConfigFromEnv(env: Record<string, string | undefined> = process.env): z.output<typeof adminCliEnvSchema> {
  return loadConfig(adminCliEnvSchema, env);
}
