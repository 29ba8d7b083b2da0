import { ConfigError } from "@roost/config";
import { mailerConfigFromEnv } from "./mailer.config.js";

const CONFIGURED = { SMTP_HOST: "smtp.example.com", MAIL_FROM_ADDRESS: "roost@example.com", PUBLIC_APP_URL: "https://roost.example.com" };

function issues(env: Record<string, string>): string {
  try {
    mailerConfigFromEnv(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("mailer config", () => {
  it("is not configured (smtp null) when none of the three recovery variables is set", () => {
    const config = mailerConfigFromEnv({});
    expect(config.smtp).toBeNull();
    expect(config.PASSWORD_RESET_TOKEN_TTL_MINUTES).toBe(30);
    expect(config.MAILER_LEASE_SECONDS).toBeGreaterThan(3 * config.SMTP_TIMEOUT_SECONDS);
  });

  it("builds SMTP settings with the port following SMTP_SECURE", () => {
    expect(mailerConfigFromEnv(CONFIGURED).smtp).toEqual({
      host: "smtp.example.com",
      port: 587,
      secure: false,
      requireTls: true,
      auth: null,
      timeoutMs: 30_000,
      fromAddress: "roost@example.com",
      fromName: "Roost",
      publicAppUrl: "https://roost.example.com",
    });
    expect(mailerConfigFromEnv({ ...CONFIGURED, SMTP_SECURE: "true" }).smtp?.port).toBe(465);
    const withAuth = mailerConfigFromEnv({ ...CONFIGURED, SMTP_PORT: "2525", SMTP_USERNAME: "u", SMTP_PASSWORD: " p w " });
    expect(withAuth.smtp?.port).toBe(2525);
    expect(withAuth.smtp?.auth).toEqual({ user: "u", pass: " p w " });
  });

  it("SMTP_REQUIRE_TLS: true by default, false for a loopback relay, as set when set", () => {
    expect(mailerConfigFromEnv(CONFIGURED).smtp?.requireTls).toBe(true);
    for (const host of ["localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"]) {
      expect([host, mailerConfigFromEnv({ ...CONFIGURED, SMTP_HOST: host }).smtp?.requireTls]).toEqual([host, false]);
    }
    expect(mailerConfigFromEnv({ ...CONFIGURED, SMTP_HOST: "127.0.0.1.example.com" }).smtp?.requireTls).toBe(true);
    expect(mailerConfigFromEnv({ ...CONFIGURED, SMTP_REQUIRE_TLS: "false" }).smtp?.requireTls).toBe(false);
    expect(mailerConfigFromEnv({ ...CONFIGURED, SMTP_HOST: "localhost", SMTP_REQUIRE_TLS: "true" }).smtp?.requireTls).toBe(true);
  });

  it("names each missing variable when recovery is configured in part", () => {
    const message = issues({ SMTP_HOST: "smtp.example.com" });
    expect(message).toContain("MAIL_FROM_ADDRESS: required when any of SMTP_HOST, MAIL_FROM_ADDRESS, PUBLIC_APP_URL is set");
    expect(message).toContain("PUBLIC_APP_URL: required");
    expect(message).not.toContain("SMTP_HOST:");
  });

  it("rejects a half SMTP AUTH pair, a bad sender, a non-http app URL and a lease shorter than a send", () => {
    expect(issues({ ...CONFIGURED, SMTP_USERNAME: "u" })).toContain("SMTP_PASSWORD: SMTP_USERNAME and SMTP_PASSWORD are set together");
    expect(issues({ ...CONFIGURED, SMTP_PASSWORD: "p" })).toContain("SMTP_USERNAME:");
    expect(issues({ ...CONFIGURED, MAIL_FROM_ADDRESS: "not-an-address" })).toContain("MAIL_FROM_ADDRESS: not an e-mail address");
    expect(issues({ ...CONFIGURED, PUBLIC_APP_URL: "ftp://roost.example.com" })).toContain("PUBLIC_APP_URL:");
    expect(issues({ ...CONFIGURED, SMTP_TIMEOUT_SECONDS: "60", MAILER_LEASE_SECONDS: "120" })).toContain(
      "MAILER_LEASE_SECONDS: must be more than 3 × SMTP_TIMEOUT_SECONDS (180)",
    );
    expect(issues({ PASSWORD_RESET_TOKEN_TTL_MINUTES: "0" })).toContain("PASSWORD_RESET_TOKEN_TTL_MINUTES:");
    expect(issues({ MAILER_RETRY_BASE_SECONDS: "60", MAILER_RETRY_MAX_SECONDS: "30" })).toContain("MAILER_RETRY_MAX_SECONDS:");
  });
});
