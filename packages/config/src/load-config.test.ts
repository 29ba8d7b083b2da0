import { z } from "zod";
import { ConfigError, envBool, envInt, envList, envNodeEnv, envString, loadConfig } from "./index.js";

const schema = z.object({
  PORT: envInt(8080, 1, 65535),
  FLAG: envBool(false),
  NAME: envString("roost"),
  LIST: envList(),
});

describe("loadConfig", () => {
  it("applies defaults for unset variables", () => {
    expect(loadConfig(schema, {})).toEqual({ PORT: 8080, FLAG: false, NAME: "roost", LIST: [] });
  });

  it("parses set values", () => {
    expect(loadConfig(schema, { PORT: "9000", FLAG: "TRUE", NAME: " x ", LIST: "a, b,," })).toEqual({
      PORT: 9000,
      FLAG: true,
      NAME: "x",
      LIST: ["a", "b"],
    });
  });

  it("names every bad variable in one error", () => {
    try {
      loadConfig(schema, { PORT: "70000", FLAG: "yes" });
      throw new Error("expected ConfigError");
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const message = (error as ConfigError).message;
      expect(message).toContain("PORT: must be between 1 and 65535, got 70000");
      expect(message).toContain('FLAG: expected true or false, got "yes"');
    }
  });

  it("rejects non-integers", () => {
    expect(() => loadConfig(schema, { PORT: "12.5" })).toThrow(/PORT: expected an integer/);
  });

  it("NODE_ENV: development, production or test; unset is development; anything else stops the boot", () => {
    const nodeEnv = z.object({ NODE_ENV: envNodeEnv });
    expect(loadConfig(nodeEnv, {})).toEqual({ NODE_ENV: "development" });
    for (const value of ["development", "production", "test"]) expect(loadConfig(nodeEnv, { NODE_ENV: value })).toEqual({ NODE_ENV: value });
    for (const value of ["Production", "prod", "staging", " production"]) {
      expect(() => loadConfig(nodeEnv, { NODE_ENV: value })).toThrow(/NODE_ENV: expected development, production, test/);
    }
  });
});
