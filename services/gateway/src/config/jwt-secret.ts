import { randomBytes } from "node:crypto";
import { chmod, link, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "@roost/observability";

const MIN_SECRET_BYTES = 32;

/**
 * JWT_SECRET when set. Outside production, an unset secret is generated once
 * and kept in DATA_DIR/jwt-secret (mode 0600) so tokens survive restarts.
 * There is never a built-in default. (Production without it fails at config.)
 */
export async function resolveJwtSecret(options: { secret: string | undefined; dataDir: string; logger: Logger }): Promise<string> {
  if (options.secret) return options.secret;
  const file = path.join(options.dataDir, "jwt-secret");
  const stored = await readStoredSecret(file);
  if (stored !== undefined) return stored;

  await mkdir(options.dataDir, { recursive: true });
  // Written whole to a private temporary file, then linked into place: link()
  // fails if the file appeared meanwhile (another process won the race: use
  // its secret), and a crash never leaves a half-written secret behind.
  const secret = randomBytes(48).toString("base64url");
  const temporary = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await writeFile(temporary, `${secret}\n`, { mode: 0o600, flag: "wx" });
    await chmod(temporary, 0o600);
    await link(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const winner = await readStoredSecret(file);
    if (winner === undefined) throw error;
    return winner;
  } finally {
    await rm(temporary, { force: true });
  }
  options.logger.warn("JWT_SECRET not set: generated a random secret", { file });
  return secret;
}

/** The stored secret, undefined when there is none; a file too short to be ours is an error, never replaced silently. */
async function readStoredSecret(file: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const stored = text.trim();
  if (Buffer.byteLength(stored) < MIN_SECRET_BYTES) {
    throw new Error(`${file} holds fewer than ${MIN_SECRET_BYTES} bytes: remove it (a new secret is generated) or set JWT_SECRET`);
  }
  return stored;
}
