import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "@roost/observability";

/**
 * JWT_SECRET when set. Outside production, an unset secret is generated once
 * and kept in DATA_DIR/jwt-secret (mode 0600) so tokens survive restarts.
 * There is never a built-in default. (Production without it fails at config.)
 */
export async function resolveJwtSecret(options: { secret: string | undefined; dataDir: string; logger: Logger }): Promise<string> {
  if (options.secret) return options.secret;
  const file = path.join(options.dataDir, "jwt-secret");
  try {
    const stored = (await readFile(file, "utf8")).trim();
    if (Buffer.byteLength(stored) >= 32) return stored;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const secret = randomBytes(48).toString("base64url");
  await mkdir(options.dataDir, { recursive: true });
  // wx: if another process won the race, use its secret instead.
  try {
    await writeFile(file, `${secret}\n`, { mode: 0o600, flag: "wx" });
    await chmod(file, 0o600);
    options.logger.warn("JWT_SECRET not set: generated a random secret", { file });
    return secret;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return (await readFile(file, "utf8")).trim();
    throw error;
  }
}
