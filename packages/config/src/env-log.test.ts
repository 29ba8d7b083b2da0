import { z } from "zod";
import { ConfigError, envLogLevel, LOG_LEVELS, loadConfig } from "./index.js";

const schema = z.object({ LOG_LEVEL: envLogLevel() });

describe("envLogLevel", () => {
  it("defaults to info and accepts every winston level", () => {
    expect(loadConfig(schema, {})).toEqual({ LOG_LEVEL: "info" });
    for (const level of LOG_LEVELS) expect(loadConfig(schema, { LOG_LEVEL: level })).toEqual({ LOG_LEVEL: level });
  });

  it("refuses any other value, naming the variable", () => {
    expect(() => loadConfig(schema, { LOG_LEVEL: "loud" })).toThrow(ConfigError);
    expect(() => loadConfig(schema, { LOG_LEVEL: "loud" })).toThrow(/LOG_LEVEL: /);
  });
});
