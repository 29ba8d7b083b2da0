import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export interface BuildInfo {
  buildVersion: string;
  builtAt: string;
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

/** Build metadata written by `npm run build` (dist/build-info.json); a dev fallback when absent. */
export function loadBuildInfo(root = repoRoot): BuildInfo {
  try {
    const parsed = JSON.parse(readFileSync(path.join(root, "dist", "build-info.json"), "utf8")) as Partial<BuildInfo>;
    if (typeof parsed.buildVersion === "string" && typeof parsed.builtAt === "string") {
      return { buildVersion: parsed.buildVersion, builtAt: parsed.builtAt };
    }
  } catch {
    // fall through to the development fallback
  }
  const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version?: string };
  return { buildVersion: `${pkg.version ?? "0.0.0"}-dev`, builtAt: new Date().toISOString() };
}
