import { mkdtemp, readFile, rm, stat, writeFile, readdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createLogger } from "@roost/observability";
import { resolveJwtSecret } from "./jwt-secret.js";

describe("resolveJwtSecret", () => {
  let dataDir: string;
  const logger = createLogger({ silent: true });
  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "roost-jwt-"));
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it("uses JWT_SECRET when set and writes nothing", async () => {
    expect(await resolveJwtSecret({ secret: "e".repeat(40), dataDir, logger })).toBe("e".repeat(40));
    expect(await readdir(dataDir)).toEqual([]);
  });

  it("generates a secret into DATA_DIR/jwt-secret with mode 0600 and reuses it on the next start", async () => {
    const nested = path.join(dataDir, "not", "yet");
    const first = await resolveJwtSecret({ secret: undefined, dataDir: nested, logger });
    expect(Buffer.byteLength(first)).toBeGreaterThanOrEqual(32);
    const file = path.join(nested, "jwt-secret");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await readFile(file, "utf8")).trim()).toBe(first);
    expect(await resolveJwtSecret({ secret: undefined, dataDir: nested, logger })).toBe(first);
    expect(await readdir(nested)).toEqual(["jwt-secret"]); // no temporary files left
  });

  it("gives every concurrent first start the same secret", async () => {
    const secrets = await Promise.all(Array.from({ length: 8 }, () => resolveJwtSecret({ secret: undefined, dataDir, logger })));
    expect(new Set(secrets).size).toBe(1);
    expect((await readFile(path.join(dataDir, "jwt-secret"), "utf8")).trim()).toBe(secrets[0]);
  });

  it("refuses a stored secret shorter than 32 bytes instead of replacing it silently", async () => {
    await writeFile(path.join(dataDir, "jwt-secret"), "too-short\n", { mode: 0o600 });
    await expect(resolveJwtSecret({ secret: undefined, dataDir, logger })).rejects.toThrow(/fewer than 32 bytes/);
    expect(await readFile(path.join(dataDir, "jwt-secret"), "utf8")).toBe("too-short\n");
  });
});
