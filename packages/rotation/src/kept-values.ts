import { randomBytes, randomUUID } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";

/** Reads a one-line value kept in `dir/name`, creating it with `make()` the first time. */
async function keptValue(dir: string, name: string, make: () => string): Promise<string> {
  const file = join(dir, name);
  try {
    const value = (await readFile(file, "utf8")).trim();
    if (value) return value;
  } catch {
    // First start: made below.
  }
  await mkdir(dir, { recursive: true });
  const value = make();
  // wx: two processes starting together keep the first one's value.
  await writeFile(file, `${value}\n`, { flag: "wx", mode: 0o600 }).catch(() => undefined);
  return (await readFile(file, "utf8")).trim();
}

export interface InstanceIdentity {
  id: string;
  name: string;
  region: string;
}

/** The instance id is stable across restarts: the variable, else one kept in DATA_DIR. */
export async function resolveInstanceIdentity(options: { id?: string | undefined; name?: string | undefined; region?: string | undefined; dataDir: string }): Promise<InstanceIdentity> {
  return {
    id: options.id ?? (await keptValue(options.dataDir, "rotator-instance-id", () => randomUUID())),
    name: options.name ?? hostname(),
    region: options.region ?? "default",
  };
}

/** The password HMAC key: the variable, else one kept in DATA_DIR (shared by processes on one DATA_DIR). */
export async function resolvePasswordKey(value: string | undefined, dataDir: string): Promise<string> {
  return value ?? (await keptValue(dataDir, "rotator-password.key", () => randomBytes(32).toString("hex")));
}
