import { isBlockedUrl } from "@roost/global-config";
import type { GatewayDeps } from "../../gateway.deps.js";
import { zodMessage } from "../../http/validation.js";
import { updateSettings } from "./user-settings.repository.js";
import { userSettingsUpdateSchema } from "./user-settings.schema.js";

/** Why a settings update was refused; REST answers 400, GraphQL BAD_USER_INPUT. */
export interface SettingsRejection {
  message: string;
  extra?: Record<string, unknown>;
}

/**
 * The one place settings updates are validated and stored, for REST and
 * GraphQL alike: zod types and ranges, then the website blacklist on judge
 * URLs. Resolves null when saved; a rejection changes nothing.
 */
export async function saveUserSettings(
  deps: Pick<GatewayDeps, "db" | "globalConfig">,
  userId: number,
  input: unknown,
): Promise<SettingsRejection | null> {
  const parsed = userSettingsUpdateSchema.safeParse(input);
  if (!parsed.success) return { message: zodMessage(parsed.error) };
  const blacklist = deps.globalConfig.current().website_blacklist;
  const blocked = (parsed.data.judges ?? []).filter((j) => isBlockedUrl(j.url, blacklist)).map((j) => j.url);
  if (blocked.length > 0) {
    return {
      message: "Judge URLs are blocked by the website blacklist",
      extra: { blocked_judges: blocked, website_blacklist: blacklist },
    };
  }
  await deps.db.prisma.$transaction((tx) => updateSettings(tx, userId, parsed.data));
  return null;
}
