import { defaultGlobalConfig, globalConfigSchema } from "./global-config.schema.js";
import { describeIssue, parseStoredConfig } from "./global-config.store.js";

describe("globalConfigSchema", () => {
  it("accepts the documented defaults unchanged", () => {
    expect(globalConfigSchema.parse(defaultGlobalConfig)).toEqual(defaultGlobalConfig);
  });

  it("refuses unknown keys at any depth and names them", () => {
    const result = globalConfigSchema.safeParse({ ...defaultGlobalConfig, checker: { ...defaultGlobalConfig.checker, bogus: 1 }, extra: 2 });
    expect(result.success).toBe(false);
    const issues = result.success ? [] : result.error.issues.map(describeIssue);
    expect(issues).toEqual(expect.arrayContaining(["unknown key extra", "unknown key checker.bogus"]));
  });
});

describe("parseStoredConfig", () => {
  it("fills keys a stored document lacks from the defaults and drops keys this version does not know", () => {
    const stored = { checker: { timeout_ms: 777, retired_option: true }, obsolete_section: {} };
    const { config, issues } = parseStoredConfig(stored);
    expect(issues).toEqual([]);
    expect(config.checker.timeout_ms).toBe(777);
    expect(config.checker.retries).toBe(defaultGlobalConfig.checker.retries);
    expect(config).not.toHaveProperty("obsolete_section");
  });

  it("resets only the section that no longer validates", () => {
    const stored = { ...defaultGlobalConfig, checker: { ...defaultGlobalConfig.checker, timeout_ms: 5 }, website_blacklist: ["kept.org"] };
    const { config, issues } = parseStoredConfig(stored);
    expect(issues).toEqual([expect.stringMatching(/^checker\.timeout_ms: /)]);
    expect(config.checker).toEqual(defaultGlobalConfig.checker);
    expect(config.website_blacklist).toEqual(["kept.org"]);
  });

  it("gives the defaults for a missing or non-object document", () => {
    expect(parseStoredConfig(undefined).config).toEqual(defaultGlobalConfig);
    expect(parseStoredConfig("garbage").config).toEqual(defaultGlobalConfig);
  });
});
