import { mkdtemp, readFile, rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";

import { resolveInstanceIdentity, resolvePasswordKey } from "./kept-values.js";

describe("values kept in DATA_DIR", () => {
  let dataDir: string;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "roost-kept-"));
  });

  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it("keeps a generated instance id across restarts; name is the host and region `default` unless given", async () => {
    const first = await resolveInstanceIdentity({ dataDir });
    const again = await resolveInstanceIdentity({ dataDir });
    expect(again).toEqual(first);
    expect(first).toMatchObject({ name: hostname(), region: "default" });
    expect((await readFile(join(dataDir, "rotator-instance-id"), "utf8")).trim()).toBe(first.id);
    expect(await resolveInstanceIdentity({ dataDir, id: "given", name: "n", region: "eu" })).toEqual({ id: "given", name: "n", region: "eu" });
  });

  it("keeps one password key for every process on the same DATA_DIR, unless the variable gives one", async () => {
    const [a, b] = await Promise.all([resolvePasswordKey(undefined, dataDir), resolvePasswordKey(undefined, dataDir)]);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(b).toBe(a);
    expect(await resolvePasswordKey("from-env", dataDir)).toBe("from-env");
  });
});
