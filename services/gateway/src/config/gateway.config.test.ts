import { ConfigError } from "@roost/config";
import { gatewayConfigFromEnv } from "./gateway.config.js";

const SECRET = "k".repeat(32);

function configError(env: Record<string, string>): string {
  try {
    gatewayConfigFromEnv(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("expected the config to be refused");
}

describe("gateway config: auth", () => {
  it("requires JWT_SECRET in production", () => {
    expect(configError({ NODE_ENV: "production" })).toMatch(/JWT_SECRET/);
  });

  it("refuses a JWT_SECRET shorter than 32 bytes, in production and out of it", () => {
    expect(configError({ NODE_ENV: "production", JWT_SECRET: "k".repeat(31) })).toMatch(/JWT_SECRET/);
    expect(configError({ NODE_ENV: "development", JWT_SECRET: "short" })).toMatch(/JWT_SECRET/);
    // Bytes, not characters: 11 three-byte characters are 33 bytes.
    expect(gatewayConfigFromEnv({ NODE_ENV: "production", JWT_SECRET: "€".repeat(11) }).JWT_SECRET).toBe("€".repeat(11));
  });

  it("accepts production with a 32-byte secret; development without one (it is generated at start)", () => {
    expect(gatewayConfigFromEnv({ NODE_ENV: "production", JWT_SECRET: SECRET }).JWT_SECRET).toBe(SECRET);
    expect(gatewayConfigFromEnv({}).JWT_SECRET).toBeUndefined();
  });

  it("defaults the registration flags by NODE_ENV", () => {
    const pick = (env: Record<string, string>) => {
      const c = gatewayConfigFromEnv(env);
      return [c.DISABLE_PUBLIC_REGISTRATION, c.ENABLE_PUBLIC_FIRST_ADMIN_BOOTSTRAP];
    };
    expect(pick({})).toEqual([false, true]);
    expect(pick({ NODE_ENV: "development" })).toEqual([false, true]);
    expect(pick({ NODE_ENV: "test" })).toEqual([false, true]);
    expect(pick({ NODE_ENV: "production", JWT_SECRET: SECRET })).toEqual([true, false]);
    expect(pick({ NODE_ENV: "production", JWT_SECRET: SECRET, DISABLE_PUBLIC_REGISTRATION: "false", ENABLE_PUBLIC_FIRST_ADMIN_BOOTSTRAP: "true" })).toEqual([false, true]);
    expect(pick({ NODE_ENV: "development", DISABLE_PUBLIC_REGISTRATION: "true", ENABLE_PUBLIC_FIRST_ADMIN_BOOTSTRAP: "false" })).toEqual([true, false]);
    expect(configError({ DISABLE_PUBLIC_REGISTRATION: "yes" })).toMatch(/DISABLE_PUBLIC_REGISTRATION/);
  });

  it("has the documented auth and rate-limit defaults", () => {
    const c = gatewayConfigFromEnv({});
    expect({
      ttl: c.JWT_TTL_MINUTES,
      failOpen: c.AUTH_REVOCATION_FAIL_OPEN,
      login: c.RATE_LIMIT_LOGIN_PER_MINUTE,
      failuresPerEmail: c.RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL,
      failuresPerIp: c.RATE_LIMIT_LOGIN_FAILURES_PER_IP,
      register: c.RATE_LIMIT_REGISTER_PER_MINUTE,
      trusted: c.TRUSTED_PROXY_CIDRS,
    }).toEqual({ ttl: 10080, failOpen: true, login: 60, failuresPerEmail: 10, failuresPerIp: 30, register: 20, trusted: [] });
    expect(configError({ JWT_TTL_MINUTES: "14" })).toMatch(/JWT_TTL_MINUTES/);
    expect(configError({ JWT_TTL_MINUTES: "10081" })).toMatch(/JWT_TTL_MINUTES/);
  });
});
