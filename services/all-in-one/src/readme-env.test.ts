import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { z } from "zod";
import { checkerEnvSchema, checkerInfraSchema } from "@roost/service-checker";
import { rotatorEnvSchema, rotatorInfraSchema } from "@roost/service-rotator";
import { adminCliEnvSchema, gatewayEnvSchema } from "@roost/service-gateway";
import { mailerEnvSchema, mailerInfraSchema } from "@roost/service-mailer";
import { maintenanceEnvSchema, maintenanceInfraSchema } from "@roost/service-maintenance";
import { scraperEnvSchema, scraperInfraSchema } from "@roost/service-scraper";
import { allInOneEnvSchema } from "./config/all-in-one.config.js";

const readme = readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../README.md"), "utf8");

/** The variable names a config schema reads: the keys of its object, unwrapping transforms and pipes. */
function envKeys(schema: z.ZodType): string[] {
  let current: unknown = schema;
  for (let depth = 0; depth < 10; depth++) {
    const def = (current as { def?: { type?: string; shape?: Record<string, unknown>; in?: unknown; innerType?: unknown } }).def;
    if (!def) break;
    if (def.type === "object" && def.shape) return Object.keys(def.shape);
    current = def.in ?? def.innerType;
  }
  throw new Error("not an object schema");
}

const schemas: Record<string, z.ZodType> = {
  gateway: gatewayEnvSchema,
  adminCli: adminCliEnvSchema,
  maintenance: maintenanceEnvSchema,
  maintenanceInfra: maintenanceInfraSchema,
  mailer: mailerEnvSchema,
  mailerInfra: mailerInfraSchema,
  allInOne: allInOneEnvSchema,
  checker: checkerEnvSchema,
  checkerInfra: checkerInfraSchema,
  rotator: rotatorEnvSchema,
  rotatorInfra: rotatorInfraSchema,
  scraper: scraperEnvSchema,
  scraperInfra: scraperInfraSchema,
};

describe("README", () => {
  it("starts with the two commands", () => {
    const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
    expect(firstBlock).toMatch(/^npm start\b/m);
    expect(firstBlock).toMatch(/^npm test\b/m);
  });

  it.each(Object.entries(schemas))("documents every variable the %s config reads", (_name, schema) => {
    const keys = envKeys(schema);
    expect(keys.length).toBeGreaterThan(0);
    const missing = keys.filter((key) => !readme.includes(`\`${key}\``));
    expect(missing).toEqual([]);
  });
});
