import { chmod, mkdir, stat } from "node:fs/promises";
import { dirname, join, relative, resolve, sep } from "node:path";

/**
 * Creates `path` (and missing parents) and gives every directory it created
 * `mode`: `mkdir`'s own mode is reduced by the umask.
 */
export async function ensureDirectory(path: string, mode: number): Promise<void> {
  const target = resolve(path);
  const firstCreated = await mkdir(target, { recursive: true, mode });
  if (firstCreated === undefined) return;
  let current = resolve(firstCreated);
  await chmod(current, mode);
  for (const part of relative(current, target).split(sep).filter((segment) => segment.length > 0)) {
    current = join(current, part);
    await chmod(current, mode);
  }
}

/** The directories from the filesystem root down to `path`, inclusive. */
function pathChain(path: string): string[] {
  const chain: string[] = [];
  let current = resolve(path);
  for (;;) {
    chain.unshift(current);
    const parent = dirname(current);
    if (parent === current) return chain;
    current = parent;
  }
}

/**
 * The first directory on the way to `path` that other users cannot traverse
 * (no `o+x`), with its permission bits; undefined when all of them can.
 * Used when we run as root and a server runs as another user.
 */
export async function findUntraversableDirectory(path: string): Promise<{ directory: string; mode: number } | undefined> {
  for (const directory of pathChain(path)) {
    const mode = (await stat(directory)).mode & 0o7777;
    if ((mode & 0o001) === 0) return { directory, mode };
  }
  return undefined;
}

/** `0755`-style rendering of permission bits for messages. */
export function formatMode(mode: number): string {
  return `0${mode.toString(8).padStart(3, "0")}`;
}
