import { randomBytes } from "node:crypto";
import { chmod, readFile, rename, rm, writeFile } from "node:fs/promises";

import { errorCode } from "./process-probe.js";

/**
 * Reads a small JSON file this package wrote. Returns undefined when it does
 * not exist; throws (naming the file) when it is not valid JSON.
 */
export async function readStateFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    throw error;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new Error(`${path} is not valid JSON; fix or remove it`, { cause: error });
  }
}

/**
 * Replaces `path` atomically (write a sibling, then rename) with mode 0600:
 * these files hold passwords, and a crash mid-write must not leave half a file.
 */
export async function writeStateFile(path: string, value: unknown): Promise<void> {
  const temporary = `${path}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    await writeFile(temporary, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
    await chmod(temporary, 0o600);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/** A random password safe to put in a URL without escaping (hex). */
export function generatePassword(): string {
  return randomBytes(24).toString("hex");
}

/** Narrows parsed JSON to a plain object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A TCP port number as stored in a state file. */
export function isPort(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value > 0 && value < 65536;
}
