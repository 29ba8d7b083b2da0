import { ConfigError } from "@roost/config";
import { allInOneConfigFromEnv } from "./all-in-one.config.js";

describe("all-in-one config", () => {
  it("production without a usable JWT_SECRET stops at config, before any embedded server starts", () => {
    expect(() => allInOneConfigFromEnv({ NODE_ENV: "production" })).toThrow(/JWT_SECRET: required in production/);
    expect(() => allInOneConfigFromEnv({ NODE_ENV: "production", JWT_SECRET: "short" })).toThrow(ConfigError);
    expect(allInOneConfigFromEnv({ NODE_ENV: "production", JWT_SECRET: "x".repeat(32) }).NODE_ENV).toBe("production");
    // Without the gateway role there is no token to sign.
    expect(allInOneConfigFromEnv({ NODE_ENV: "production", SERVICES: "mailer,maintenance" }).SERVICES).toEqual(["mailer", "maintenance"]);
    expect(allInOneConfigFromEnv({}).NODE_ENV).toBe("development");
  });

  it("an unknown NODE_ENV stops the boot", () => {
    expect(() => allInOneConfigFromEnv({ NODE_ENV: "Production" })).toThrow(/NODE_ENV/);
  });
});
