import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The gateway's V8 flags (scripts/service-node-flags.mjs),
 * checked for what they are there for rather than for their spelling.
 * Allocation-site pretenuring is off: after a burst in which a literal's
 * objects survived (a large export, start-up), V8 would otherwise allocate
 * every later object of that literal in the old generation, where a
 * gateway's list pages filled it with garbage only a full collection takes
 * back (docs/benchmarks.md, item 21). The flags' other half, the fixed
 * growing factor, is checked by `npm run bench` (its second gateway's
 * first page after the exports): the state it prevents comes from timing
 * that no short test reproduces.
 */
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const fixture = path.join(repo, "test", "support", "pretenure-burst.mjs");
const PRETENURING_OFF = "--no-allocation-site-pretenuring";

interface BurstResult {
  /** How far the old generation grew while 20M short-lived objects passed through, MiB. */
  oldGrowthMiB: number;
}

function runBurst(flags: readonly string[]): BurstResult {
  const child = spawnSync(process.execPath, [...flags, fixture], { encoding: "utf8", timeout: 120_000 });
  if (child.status !== 0) throw new Error(`fixture exited ${child.status ?? child.signal}: ${child.stderr}`);
  return JSON.parse(child.stdout) as BurstResult;
}

async function serviceNodeFlags(): Promise<string[]> {
  const module = (await import(path.join(repo, "scripts", "service-node-flags.mjs"))) as { GATEWAY_NODE_FLAGS: string[] };
  return module.GATEWAY_NODE_FLAGS;
}

describe("the gateway's V8 flags", () => {
  it("keep short-lived objects young after a burst of long-lived ones from the same literal", async () => {
    const result = runBurst(await serviceNodeFlags());
    // 20M objects of ~80 bytes pass through; pretenured, most of 1.5 GiB would land in the old generation.
    expect(result.oldGrowthMiB).toBeLessThan(8);
  }, 120_000);

  it("are what makes the difference: without the pretenuring flag, V8 pretenures the literal", async () => {
    const withPretenuring = (await serviceNodeFlags()).filter((flag) => flag !== PRETENURING_OFF);
    const result = runBurst(withPretenuring);
    // If this fails, this Node's V8 no longer pretenures here: the flag may be unneeded (item 21).
    expect(result.oldGrowthMiB).toBeGreaterThan(64);
  }, 120_000);
});

describe("flags per service", () => {
  type FlagsFor = (service: string, env: Record<string, string | undefined>) => string[];
  const load = async () =>
    (await import(path.join(repo, "scripts", "service-node-flags.mjs"))) as { GATEWAY_NODE_FLAGS: string[]; nodeFlagsFor: FlagsFor };

  it("go to the gateway, and to all-in-one only when it hosts the gateway", async () => {
    const { GATEWAY_NODE_FLAGS, nodeFlagsFor } = await load();
    expect(nodeFlagsFor("gateway", {})).toEqual(GATEWAY_NODE_FLAGS);
    expect(nodeFlagsFor("mailer", {})).toEqual([]);
    expect(nodeFlagsFor("maintenance", {})).toEqual([]);
    expect(nodeFlagsFor("all-in-one", {})).toEqual(GATEWAY_NODE_FLAGS);
    expect(nodeFlagsFor("all-in-one", { SERVICES: "all" })).toEqual(GATEWAY_NODE_FLAGS);
    expect(nodeFlagsFor("all-in-one", { SERVICES: "mailer, gateway" })).toEqual(GATEWAY_NODE_FLAGS);
    expect(nodeFlagsFor("all-in-one", { SERVICES: "mailer,maintenance" })).toEqual([]);
  });
});
