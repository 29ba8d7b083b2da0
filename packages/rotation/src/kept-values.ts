import { randomBytes, randomUUID } from "node:crypto";
import { link, mkdir, readFile, unlink, writeFile } from "node:fs/promises";
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
  // Written aside, then linked into place: link() fails when the file exists, so
  // processes starting together all read the first one's complete value.
  const aside = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
  await writeFile(aside, `${make()}\n`, { mode: 0o600 });
  await link(aside, file).catch(() => undefined);
  await unlink(aside);
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
